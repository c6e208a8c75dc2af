package fsmodel

import (
	"fmt"
	"time"
)

// actor has the second actor change the file on its disk, then checks
// what the path shows of it: a fresh open at once (close-to-open), and
// the held descriptor within cfg.Within, in an order picked at random
// (a fresh open may refresh what the held descriptor reads).
func (r *run) actor() error {
	// What the mount wrote reaches the disk first: the actor changes
	// the file the path would show, not one with writes still on their
	// way to it.
	if err := r.f.Sync(); err != nil {
		return fmt.Errorf("fsync before the actor's change: %v", err)
	}
	replaced, err := r.change()
	if err != nil {
		return err
	}
	if replaced {
		// The held descriptor has the old file: only a fresh open can
		// see the new one, and it becomes the held one.
		if err := r.freshOpen(); err != nil {
			return err
		}
		return r.reopen()
	}
	if r.r.IntN(2) == 0 {
		if err := r.freshOpen(); err != nil {
			return err
		}
		return r.heldSees()
	}
	if err := r.heldSees(); err != nil {
		return err
	}
	return r.freshOpen()
}

// change makes one change through the Disk and in the model; it says
// whether the file was replaced by another.
func (r *run) change() (replaced bool, err error) {
	d := r.cfg.Disk
	switch k := r.r.IntN(5); {
	case k == 0 && r.size() > 0: // overwrite in place, the size kept
		off, n := r.span(r.size())
		n = min(n, r.size()-off)
		r.note("actor: overwrite %#x..%#x in place, size %#x", off, off+n, r.size())
		p := r.data(off, n)
		err = d.WriteAt(p, off)
		r.put(p, off)
	case k == 1: // shrink or grow by truncate
		size := r.r.Int64N(r.cfg.MaxSize + 1)
		r.note("actor: truncate %#x -> %#x", r.size(), size)
		err = d.Truncate(size)
		r.resize(size)
	case k == 2: // truncate to nothing, then write anew
		n := 1 + r.r.Int64N(r.cfg.MaxLen)
		r.note("actor: truncate to 0 and write %#x bytes", n)
		if err = d.Truncate(0); err == nil {
			err = d.WriteAt(r.data(0, n), 0)
		}
		r.model = r.data(0, n)
	case k == 3: // a new file renamed over it
		n := r.r.Int64N(r.cfg.MaxLen + 1)
		r.note("actor: rename a file of %#x bytes over it", n)
		r.model = r.data(0, n)
		return true, d.Replace(r.model)
	default: // write at or past the end: grow
		off := r.size() + r.r.Int64N(page)
		n := min(1+r.r.Int64N(r.cfg.MaxLen), r.cfg.MaxSize-off)
		if n <= 0 {
			off, n = 0, 1
		}
		r.note("actor: write %#x..%#x, size %#x", off, off+n, r.size())
		p := r.data(off, n)
		err = d.WriteAt(p, off)
		r.put(p, off)
	}
	if err != nil {
		return false, fmt.Errorf("the actor's change on the disk: %v", err)
	}
	return false, nil
}

// freshOpen opens the file anew and fails unless it reads exactly the
// model: at once, or within cfg.OpenWithin where a change may take that
// long to reach the path (a device's notice across its link).
func (r *run) freshOpen() error {
	return r.within(r.cfg.OpenWithin, func() error {
		f, err := r.cfg.Open(false)
		if err != nil {
			return fmt.Errorf("a fresh open after the actor's change: %v", err)
		}
		defer f.Close()
		return r.checkAll(f, "a fresh open after the actor's change (close-to-open)")
	})
}

// heldSees fails unless the held descriptor reads the model within
// cfg.Within.
func (r *run) heldSees() error {
	return r.within(r.cfg.Within, func() error {
		return r.checkAll(r.f, "the held descriptor after the actor's change")
	})
}

// within polls check until it passes, failing with its last error if it
// has not passed by d; a d of 0 is a single look.
func (r *run) within(d time.Duration, check func() error) error {
	deadline := time.Now().Add(d)
	delay := time.Millisecond
	for {
		err := check()
		if err == nil {
			return nil
		}
		if d == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not seen within %v: %v", d, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// reopen replaces the held descriptor by a fresh one.
func (r *run) reopen() error {
	f, err := r.cfg.Open(false)
	if err != nil {
		return fmt.Errorf("reopening after the file was replaced: %v", err)
	}
	r.f.Close()
	r.f = f
	return nil
}
