package ninep

import "golang.org/x/sys/unix"

// peerUid is the uid of the process at the other end of a unix socket.
func peerUid(fd int) (uint32, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0, err
	}
	return cred.Uid, nil
}
