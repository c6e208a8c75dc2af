// Package bounds keeps one client of the daemon (a 9P connection, a user
// of a FUSE mount, a writer of /dev/log, a peer sending bad frames) from
// taking what the others need: how many files it may hold open
// (OpenLimit), and how often its trouble may be written to the log
// (RateLog). The edges and backends share these; they are not part of
// the tree's interface (vfs).
package bounds
