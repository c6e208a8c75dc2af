package ninep

import "syscall"

// darwinTable is how macOS numbers what 9P2000.L carries, written out
// as numbers (from macOS's <sys/errno.h>, <sys/fcntl.h>, <sys/xattr.h>,
// <sys/stat.h> and <sys/types.h>) so that every OS compiles it and
// TestDarwinTable proves it on Linux; host_darwin.go makes it the host's.
var darwinTable = hostTable{
	errnos: darwinErrnos,
	open: []numPair[wireOpenFlags, int]{
		{wO_WRONLY, 0x1}, {wO_RDWR, 0x2}, {wO_NONBLOCK, 0x4}, {wO_APPEND, 0x8},
		{wO_FASYNC, 0x40}, {wO_SYNC, 0x80}, {wO_NOFOLLOW, 0x100}, {wO_CREAT, 0x200},
		{wO_TRUNC, 0x400}, {wO_EXCL, 0x800}, {wO_NOCTTY, 0x20000}, {wO_DIRECTORY, 0x100000},
		{wO_DSYNC, 0x400000}, {wO_CLOEXEC, 0x1000000},
		// macOS has no O_DIRECT, O_LARGEFILE or O_NOATIME: they are dropped.
	},
	xattr: []numPair[wireXattrFlags, int]{
		{wXATTR_CREATE, 0x2}, {wXATTR_REPLACE, 0x4}, // 0x1 is XATTR_NOFOLLOW
	},
	types: []numPair[wireMode, uint32]{
		{wS_IFSOCK, 0o140000}, {wS_IFLNK, 0o120000}, {wS_IFREG, 0o100000}, {wS_IFBLK, 0o060000},
		{wS_IFDIR, 0o040000}, {wS_IFCHR, 0o020000}, {wS_IFIFO, 0o010000},
		// S_IFWHT (0o160000, a whiteout) has no wire type.
	},
	devJoin:  darwinDevJoin,
	devSplit: darwinDevSplit,
}

// darwinDevJoin is macOS's makedev: an 8-bit major over a 24-bit minor.
func darwinDevJoin(major, minor uint32) uint64 {
	return uint64(major&0xff)<<24 | uint64(minor&0xffffff)
}

// darwinDevSplit is macOS's major and minor.
func darwinDevSplit(dev uint64) (major, minor uint32) {
	return uint32(dev>>24) & 0xff, uint32(dev) & 0xffffff
}

// darwinErrnos pairs the errnos macOS and Linux both have; macOS's own
// (EFTYPE, EAUTH, the RPC and Mach-O ones) reach the wire as EIO.
var darwinErrnos = []numPair[wireErrno, syscall.Errno]{
	{wEPERM, 1},
	{wENOENT, 2},
	{wESRCH, 3},
	{wEINTR, 4},
	{wEIO, 5},
	{wENXIO, 6},
	{wE2BIG, 7},
	{wENOEXEC, 8},
	{wEBADF, 9},
	{wECHILD, 10},
	{wEAGAIN, 35},
	{wEWOULDBLOCK, 35},
	{wENOMEM, 12},
	{wEACCES, 13},
	{wEFAULT, 14},
	{wENOTBLK, 15},
	{wEBUSY, 16},
	{wEEXIST, 17},
	{wEXDEV, 18},
	{wENODEV, 19},
	{wENOTDIR, 20},
	{wEISDIR, 21},
	{wEINVAL, 22},
	{wENFILE, 23},
	{wEMFILE, 24},
	{wENOTTY, 25},
	{wETXTBSY, 26},
	{wEFBIG, 27},
	{wENOSPC, 28},
	{wESPIPE, 29},
	{wEROFS, 30},
	{wEMLINK, 31},
	{wEPIPE, 32},
	{wEDOM, 33},
	{wERANGE, 34},
	{wEDEADLK, 11},
	{wENAMETOOLONG, 63},
	{wENOLCK, 77},
	{wENOSYS, 78},
	{wENOTEMPTY, 66},
	{wELOOP, 62},
	{wENOMSG, 91},
	{wEIDRM, 90},
	{wENOSTR, 99},
	{wENODATA, 96},
	{wENODATA, 93}, // ENOATTR, what macOS's getxattr(2) says of a name it lacks
	{wETIME, 101},
	{wENOSR, 98},
	{wEREMOTE, 71},
	{wENOLINK, 97},
	{wEPROTO, 100},
	{wEMULTIHOP, 95},
	{wEBADMSG, 94},
	{wEOVERFLOW, 84},
	{wEILSEQ, 92},
	{wEUSERS, 68},
	{wENOTSOCK, 38},
	{wEDESTADDRREQ, 39},
	{wEMSGSIZE, 40},
	{wEPROTOTYPE, 41},
	{wENOPROTOOPT, 42},
	{wEPROTONOSUPPORT, 43},
	{wESOCKTNOSUPPORT, 44},
	{wEOPNOTSUPP, 102},
	{wENOTSUP, 45},
	{wEPFNOSUPPORT, 46},
	{wEAFNOSUPPORT, 47},
	{wEADDRINUSE, 48},
	{wEADDRNOTAVAIL, 49},
	{wENETDOWN, 50},
	{wENETUNREACH, 51},
	{wENETRESET, 52},
	{wECONNABORTED, 53},
	{wECONNRESET, 54},
	{wENOBUFS, 55},
	{wEISCONN, 56},
	{wENOTCONN, 57},
	{wESHUTDOWN, 58},
	{wETOOMANYREFS, 59},
	{wETIMEDOUT, 60},
	{wECONNREFUSED, 61},
	{wEHOSTDOWN, 64},
	{wEHOSTUNREACH, 65},
	{wEALREADY, 37},
	{wEINPROGRESS, 36},
	{wESTALE, 70},
	{wEDQUOT, 69},
	{wECANCELED, 89},
	{wEOWNERDEAD, 105},
	{wENOTRECOVERABLE, 104},
}
