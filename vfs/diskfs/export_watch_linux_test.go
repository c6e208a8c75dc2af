package diskfs

import "time"

// SetBatchDelay makes the watches started from now on gather events for
// d before handing them on, so that a test can tell a fence's hand-over
// from the batch timer's; it returns what puts the delay back.
func SetBatchDelay(d time.Duration) (restore func()) {
	was := batchDelay
	batchDelay = d
	return func() { batchDelay = was }
}

// FenceDir is the private directory of the marker of f's watch ("": no
// watch, or no marker).
func FenceDir(f *FS) string {
	if tw := f.watch.Load(); tw != nil {
		return tw.marker.dir
	}
	return ""
}

// SetMarkerPatience makes the watches started from now on give a fence
// marker up after d; it returns what puts the patience back.
func SetMarkerPatience(d time.Duration) (restore func()) {
	was := markerPatience
	markerPatience = d
	return func() { markerPatience = was }
}

// LoseFenceMarkers makes the markers of f's watch go unseen, as if the
// kernel's queue dropped them: their directory is watched no more.
func LoseFenceMarkers(f *FS) error {
	tw := f.watch.Load()
	return tw.w.Remove(tw.marker.dir)
}
