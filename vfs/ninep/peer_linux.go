package ninep

import "syscall"

// peerUid is the uid of the process at the other end of a unix socket.
func peerUid(fd int) (uint32, error) {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return 0, err
	}
	return cred.Uid, nil
}
