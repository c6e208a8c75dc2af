package shelld

import (
	"io"
	"strings"
	"sync"

	"github.com/charmbracelet/x/vt"
)

// Screen is the session's terminal as a person would see it: its rows
// of text at the terminal's size, and where the cursor is.
type Screen struct {
	Rows, Cols   int
	CursorRow    int // 1-based, as terminals count
	CursorCol    int
	CursorHidden bool
	Lines        []string // Rows lines, trailing blanks trimmed
}

// screen keeps a terminal emulator fed with the session's output. It is
// made on the first look (Session.Screen), so a session nobody looks at
// pays nothing for it.
type screen struct {
	mu  sync.Mutex
	emu *vt.Emulator
}

// newScreen starts an emulator of the given size and feeds it what the
// log still keeps. Where the log's head was dropped the replay starts in
// the middle of the output, so the first look may show what a program
// drew before its last full redraw in the wrong place; everything drawn
// after is exact.
func newScreen(rows, cols uint16, log *Log) *screen {
	sc := &screen{emu: vt.NewEmulator(int(cols), int(rows))}
	// The emulator answers a program's queries (cursor position, device
	// attributes) on a pipe of its own: the session's terminal answers
	// for real, so these are read and dropped, or it would block.
	go io.Copy(io.Discard, sc.emu)
	start, end, _, _ := log.Stat()
	buf := make([]byte, 64<<10)
	for off := start; off < end; {
		n, err := log.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if n == 0 || err != nil && err != io.EOF {
			break
		}
		sc.emu.Write(buf[:n])
		off += int64(n)
	}
	return sc
}

func (sc *screen) write(p []byte) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.emu.Write(p)
}

func (sc *screen) resize(rows, cols uint16) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.emu.Resize(int(cols), int(rows))
}

func (sc *screen) close() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.emu.Close()
}

// snapshot is the screen now.
func (sc *screen) snapshot() Screen {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	w, h := sc.emu.Width(), sc.emu.Height()
	cur := sc.emu.CursorPosition()
	s := Screen{Rows: h, Cols: w, CursorRow: cur.Y + 1, CursorCol: cur.X + 1,
		CursorHidden: sc.emu.CursorHidden(), Lines: make([]string, h)}
	var b strings.Builder
	for y := range h {
		b.Reset()
		for x := 0; x < w; x++ {
			c := sc.emu.CellAt(x, y)
			switch {
			case c == nil || c.Content == "":
				b.WriteByte(' ')
			default:
				b.WriteString(c.Content)
				x += max(c.Width, 1) - 1 // a wide character fills two cells
			}
		}
		s.Lines[y] = strings.TrimRight(b.String(), " ")
	}
	return s
}

// Screen returns what the session's terminal shows now. The first call
// starts following the output (newScreen); the emulator then lives as
// long as the session.
func (s *Session) Screen() Screen {
	if sc := s.scr.Load(); sc != nil {
		return sc.snapshot()
	}
	s.mu.Lock()
	size := s.size
	s.mu.Unlock()
	s.rd.Lock() // no output is emitted while the replay catches up
	sc := s.scr.Load()
	if sc == nil {
		sc = newScreen(size[0], size[1], s.out)
		s.scr.Store(sc)
	}
	s.rd.Unlock()
	s.mu.Lock()
	if s.size != size { // resized while the screen was being made
		sc.resize(s.size[0], s.size[1])
	}
	s.mu.Unlock()
	return sc.snapshot()
}

// feedScreen passes output on to the screen, once someone looks at it.
func (s *Session) feedScreen(p []byte) {
	if sc := s.scr.Load(); sc != nil {
		sc.write(p)
	}
}

func (s *Session) resizeScreen(rows, cols uint16) {
	if sc := s.scr.Load(); sc != nil {
		sc.resize(rows, cols)
	}
}

func (s *Session) closeScreen() {
	if sc := s.scr.Load(); sc != nil {
		sc.close()
	}
}
