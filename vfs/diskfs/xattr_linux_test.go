package diskfs

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
)

// An attribute that grows between the size query and the read (here from
// empty to ten bytes, over and over) is read whole or retried, never
// sliced past its buffer.
func TestXattrGrowingWhileRead(t *testing.T) {
	fs, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, h, err := fs.Root().Create(ctx, "f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	x := n.(vfs.Xattrer)
	if err := x.SetXattr(ctx, "user.grow", nil, 0); err != nil {
		t.Skip("no user xattrs here: ", err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			val := []byte("0123456789")[:10*(i%2)]
			x.SetXattr(ctx, "user.grow", val, 0)
		}
	}()
	for range 3000 {
		v, err := x.GetXattr(ctx, "user.grow")
		if err != nil || (len(v) != 0 && string(v) != "0123456789") {
			t.Errorf("GetXattr: %q, %v; want empty or the ten digits", v, err)
			break
		}
		names, err := x.ListXattr(ctx)
		if err != nil || len(names) != 1 {
			t.Errorf("ListXattr: %q, %v", names, err)
			break
		}
	}
	close(stop)
	wg.Wait()
}
