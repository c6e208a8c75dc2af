package ninep

import (
	"context"
	"strings"
	"syscall"

	"github.com/gsvfs/gsvfs/vfs"
)

// xattrMax is the largest extended attribute value Linux allows.
const xattrMax = 64 << 10

// xattrwalk makes newfid a read-only view of one attribute's value, or of
// the list of names when name is empty.
func (c *conn) xattrwalk(ctx context.Context, m *Txattrwalk) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		value, err := readXattr(ctx, f.node(), m.Name)
		if err != nil {
			return nil, err
		}
		nf := newFid(f.at.Load(), f.uid)
		nf.xattr = &xattrState{name: m.Name, value: value}
		if err := c.addFid(m.NewFid, nf); err != nil {
			return nil, err
		}
		return &Rxattrwalk{Size: uint64(len(value))}, nil
	})
}

func readXattr(ctx context.Context, n vfs.Node, name string) ([]byte, error) {
	x, ok := n.(vfs.Xattrer)
	if name == "" {
		if !ok {
			return []byte{}, nil
		}
		names, err := x.ListXattr(ctx)
		if err != nil || len(names) == 0 {
			return []byte{}, err
		}
		return []byte(strings.Join(names, "\x00") + "\x00"), nil
	}
	if !ok {
		return nil, vfs.Error("getxattr", name, syscall.ENODATA)
	}
	v, err := x.GetXattr(ctx, name)
	if v == nil && err == nil {
		v = []byte{}
	}
	return v, err
}

// xattrcreate turns fid into an attribute being written: the value
// arrives in Twrites and is set when the fid is clunked. A zero size
// with XATTR_REPLACE removes the attribute: that is how Linux's client
// sends removexattr (so setxattr of an empty value with XATTR_REPLACE is
// a removal over 9P).
func (c *conn) xattrcreate(ctx context.Context, m *Txattrcreate) (Message, error) {
	return withFid(ctx, c, m.Fid, func(f *fid) (Message, error) {
		if _, ok := f.node().(vfs.Xattrer); !ok {
			return nil, vfs.Error("setxattr", m.Name, syscall.EOPNOTSUPP)
		}
		if m.Size > xattrMax {
			return nil, vfs.Error("setxattr", m.Name, syscall.E2BIG)
		}
		if m.Name == "" {
			return nil, vfs.Error("setxattr", m.Name, syscall.EINVAL)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.handle != nil || f.xattr != nil {
			return nil, vfs.Error("setxattr", m.Name, syscall.EBADF)
		}
		f.xattr = &xattrState{name: m.Name, size: m.Size, flags: m.Flags, writing: true,
			value: make([]byte, 0, m.Size)}
		return &Rxattrcreate{}, nil
	})
}

// xattrValue returns the value a Txattrwalk fid reads, or nil.
func (f *fid) xattrValue() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.xattr == nil || f.xattr.writing {
		return nil
	}
	return f.xattr.value
}

// xattrAppend adds a Twrite's data to an attribute being written. It
// reports false when f is not such a fid.
func (f *fid) xattrAppend(off uint64, p []byte) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.xattr
	if x == nil {
		return false, nil
	}
	if !x.writing || off != uint64(len(x.value)) || off+uint64(len(p)) > x.size {
		return true, vfs.Error("setxattr", x.name, syscall.EINVAL)
	}
	x.value = append(x.value, p...)
	return true, nil
}

// commitXattr sets (or removes) the attribute a Txattrcreate fid wrote,
// with its flags as host numbers them.
func (f *fid) commitXattr(ctx context.Context, host *hostNumbers) error {
	f.mu.Lock()
	x := f.xattr
	f.mu.Unlock()
	if x == nil || !x.writing {
		return nil
	}
	xn := f.node().(vfs.Xattrer) // checked at Txattrcreate
	if x.size == 0 && x.flags&wXATTR_REPLACE != 0 {
		return xn.RemoveXattr(ctx, x.name)
	}
	if uint64(len(x.value)) != x.size {
		return vfs.Error("setxattr", x.name, syscall.EINVAL)
	}
	return xn.SetXattr(ctx, x.name, x.value, host.xattrFromWire(x.flags))
}
