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
// context ends.
package ninep
