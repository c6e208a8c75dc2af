package devfs

// hostDev packs a device number as macOS does: an 8-bit major over a
// 24-bit minor. The 9P edge unpacks it into Linux's numbers on the wire.
func hostDev(major, minor uint32) uint64 {
	return uint64(major)<<24 | uint64(minor&0xffffff)
}
