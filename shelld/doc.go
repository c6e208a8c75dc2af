// Package shelld runs the shell sessions that /proc shows as files: an
// interactive login shell, or one command, under a pseudo-terminal, with
// its output drained into a bounded log, time limits that end the whole
// process group, an environment built from an allow-list, a cap on live
// sessions, and forgetting of finished ones after a retention time. It
// knows nothing of files; procfs is the view over it.
package shelld
