//go:build !darwin

package devfs

// hostDev packs a device number as Linux does (glibc's makedev), which
// the 9P edge also takes where the host's own packing is not known.
func hostDev(major, minor uint32) uint64 {
	ma, mi := uint64(major), uint64(minor)
	return (ma&0xfffff000)<<32 | (ma&0xfff)<<8 | (mi&0xffffff00)<<12 | mi&0xff
}
