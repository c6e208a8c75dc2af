// Package shelld runs the shell sessions that /proc shows as files: an
// interactive login shell, or one command, under a pseudo-terminal, with
// its output drained into a bounded log, time limits that end the whole
// process group, an environment built from an allow-list, a cap on live
// sessions, and forgetting of finished ones after a retention time. It
// knows nothing of files; procfs is the view over it.
//
// In an interactive shell every command line written to the terminal gets
// a record (Session.Commands, Command, WaitCommand): its input, the range
// of the log that is its output, its exit code and status. The session
// learns where each command's output begins and ends, and how it exited,
// from prompt markers: escape sequences with a per-session nonce that the
// shell is made to print by start-up files gsvfs controls (bash, zsh and
// POSIX sh such as dash and busybox sh; see integration.go), and which are
// taken out of the log (marker.go, commands.go). A running session whose
// terminal's foreground is blocked reading it — the shell at its prompt, or
// a program that wants input — is "waiting"; that is looked up on the
// terminal and in /proc when asked (tty_linux.go).
package shelld
