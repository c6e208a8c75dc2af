// Package ninep is gsvfs's own 9P2000.L: the message codec, a server that
// exports any vfs.Node, and a client that turns a remote export back into
// a vfs.Node.
//
// The server gives every request its own context, and hands anything that
// may wait to its own goroutine, so a read blocked in a backend (a
// session's wait file, a slow remote device) delays nothing else, and
// Tflush cancels it at once. Quick requests on local trees (vfs.Quick) run
// on the goroutine that read them, which spares a hand-off per request. No
// server-wide lock is held across a backend call. Errors keep their exact
// errno. Authentication belongs to the transport: a unix socket admits its
// owner and root only (see Listen).
//
// The client gives every call a context, fails all calls within a second
// when the server goes away or stops answering, and flushes requests whose
// context ends. Its caches (the c*.go files: ccache.go what the server
// said, cread.go read-ahead, cwrite.go write-behind, cdir.go and
// clazy.go opens answered from the cache, cheld.go the whole content of
// small files read whole, clist.go a directory opened and listed in one
// request) each open with their numbered invariants.
//
// Change notices are causal (watchmsg.go): on a Tnotify stream the server
// fences its tree's watch before each reply and writes the changes made
// before it ahead of it (swatch.go), and the client applies each batch on
// its reader, before the replies behind it (cwatch.go), so a cached
// answer is never older than news the caller could have had.
//
// Numbers on the wire are Linux's, as 9P2000.L defines them, whatever
// the host; vfs's are the host's own (syscall.Errno, syscall.O_*,
// S_IF*, dev_t, XATTR_*), and the package converts at its edge, once,
// through the host's table (hostNumbers: host_linux.go, host_darwin.go,
// host_other.go). vfs keeps the host's numbers because everything else
// in it hands them to the host's kernel as they are: the disk trees to
// open(2) and setxattr(2), FUSE to its own kernel, which speaks them
// too; 9P is the one edge whose peer may be another system, so the one
// that converts. Lock types are vfs's own (vfs.LockType) already. Each
// kind of wire number has a type of its own (wireErrno, wireOpenFlags,
// wireMode, ...), so a host number put in a message unconverted is a
// compile error; TestWireFieldsTyped keeps new fields to that rule.
package ninep
