//go:build !linux && !darwin

package ninep

import (
	"os"
	"syscall"
)

// host is the numbers of an OS gsvfs has no table for, by the names
// every OS's syscall and os give (the package needs more than this to
// run there, but these never pass a host's number as the wire's). A
// port gives its OS a table of its own, as host_darwin_table.go does.
var host = newHostNumbers(hostTable{
	errnos: []numPair[wireErrno, syscall.Errno]{
		{wEPERM, syscall.EPERM}, {wENOENT, syscall.ENOENT}, {wEINTR, syscall.EINTR}, {wEIO, syscall.EIO},
		{wENXIO, syscall.ENXIO}, {wE2BIG, syscall.E2BIG}, {wEBADF, syscall.EBADF}, {wENOMEM, syscall.ENOMEM},
		{wEACCES, syscall.EACCES}, {wEBUSY, syscall.EBUSY}, {wEEXIST, syscall.EEXIST}, {wEXDEV, syscall.EXDEV},
		{wENODEV, syscall.ENODEV}, {wENOTDIR, syscall.ENOTDIR}, {wEISDIR, syscall.EISDIR}, {wEINVAL, syscall.EINVAL},
		{wENFILE, syscall.ENFILE}, {wEMFILE, syscall.EMFILE}, {wENOTTY, syscall.ENOTTY}, {wEFBIG, syscall.EFBIG},
		{wENOSPC, syscall.ENOSPC}, {wESPIPE, syscall.ESPIPE}, {wEROFS, syscall.EROFS}, {wEMLINK, syscall.EMLINK},
		{wEPIPE, syscall.EPIPE}, {wERANGE, syscall.ERANGE}, {wEAGAIN, syscall.EAGAIN}, {wEDEADLK, syscall.EDEADLK},
		{wENAMETOOLONG, syscall.ENAMETOOLONG}, {wENOLCK, syscall.ENOLCK}, {wENOSYS, syscall.ENOSYS},
		{wENOTEMPTY, syscall.ENOTEMPTY}, {wELOOP, syscall.ELOOP}, {wEOPNOTSUPP, syscall.EOPNOTSUPP},
		{wENOTSUP, syscall.ENOTSUP}, {wETIMEDOUT, syscall.ETIMEDOUT}, {wESTALE, syscall.ESTALE},
		{wEDQUOT, syscall.EDQUOT}, {wECANCELED, syscall.ECANCELED}, {wEOVERFLOW, syscall.EOVERFLOW},
	},
	open: []numPair[wireOpenFlags, int]{
		{wO_WRONLY, os.O_WRONLY}, {wO_RDWR, os.O_RDWR}, {wO_APPEND, os.O_APPEND}, {wO_CREAT, os.O_CREATE},
		{wO_EXCL, os.O_EXCL}, {wO_SYNC, os.O_SYNC}, {wO_TRUNC, os.O_TRUNC},
	},
	types: []numPair[wireMode, uint32]{
		{wS_IFSOCK, syscall.S_IFSOCK}, {wS_IFLNK, syscall.S_IFLNK}, {wS_IFREG, syscall.S_IFREG},
		{wS_IFBLK, syscall.S_IFBLK}, {wS_IFDIR, syscall.S_IFDIR}, {wS_IFCHR, syscall.S_IFCHR},
		{wS_IFIFO, syscall.S_IFIFO},
	},
	devJoin:  linuxDevJoin, // no better guess
	devSplit: linuxDevSplit,
})
