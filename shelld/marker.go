package shelld

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Prompt markers are the escape sequences the shell integration makes an
// interactive shell print (see integration.go):
//
//	ESC ] 6973 ; NONCE ; PID ; KIND [; ARG...] BEL
//
// NONCE is random per session, so output cannot forge them by chance, and
// PID is the shell's, so a nested shell that inherited the integration is
// told apart. KIND is one of:
//
//	D;STATUS;SEQ  a primary prompt begins; STATUS is $? of what ran before,
//	              SEQ counts prompts (a redraw repeats it)
//	B             the primary prompt ends: the shell reads a command line
//	S             a continuation prompt (PS2) ends: the line read was incomplete
//	C             a command line was read and runs now (bash PS0, zsh preexec)
//
// They never reach the Log: the stripper takes them out of the stream.
const markerOSC = "\x1b]6973;"

// maxMarkerBody bounds what may follow the prefix before the BEL; longer
// is not a marker.
const maxMarkerBody = 64

type marker struct {
	pid    int
	kind   byte
	status int
	seq    int
}

func newNonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// parseMarker reads the part of a marker between the prefix and the BEL.
func parseMarker(body []byte) (marker, bool) {
	f := strings.Split(string(body), ";")
	if len(f) < 2 || len(f[1]) != 1 {
		return marker{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return marker{}, false
	}
	m := marker{pid: pid, kind: f[1][0]}
	switch m.kind {
	case 'D':
		if len(f) != 4 {
			return marker{}, false
		}
		if m.status, err = strconv.Atoi(f[2]); err != nil {
			return marker{}, false
		}
		if m.seq, err = strconv.Atoi(f[3]); err != nil {
			return marker{}, false
		}
	case 'B', 'S', 'C':
	default:
		return marker{}, false
	}
	return m, true
}

// stripper takes the markers of one nonce out of a byte stream fed in
// arbitrary pieces. A piece that ends in what may be the beginning of a
// marker is held back until the next piece (or flush) tells.
type stripper struct {
	prefix []byte
	held   []byte
}

func newStripper(nonce string) *stripper {
	return &stripper{prefix: []byte(markerOSC + nonce + ";")}
}

// feed passes p on: the bytes that are not markers to text, in order, and
// the body of each marker to mark, at its place among them.
func (st *stripper) feed(p []byte, text func([]byte), mark func([]byte)) {
	data := p
	if len(st.held) > 0 {
		data = append(st.held, p...)
		st.held = nil
	}
	last := 0
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], 0x1b)
		if j < 0 {
			break
		}
		j += i
		i = j + 1
		rest := data[j:]
		if len(rest) < len(st.prefix) {
			if bytes.HasPrefix(st.prefix, rest) {
				st.hold(data[last:j], rest, text)
				return
			}
			continue
		}
		if !bytes.HasPrefix(rest, st.prefix) {
			continue
		}
		body := rest[len(st.prefix):]
		k := bytes.IndexByte(body[:min(len(body), maxMarkerBody+1)], 0x07)
		if k < 0 {
			if len(body) <= maxMarkerBody && plainBody(body) {
				st.hold(data[last:j], rest, text)
				return
			}
			continue
		}
		if !plainBody(body[:k]) {
			continue
		}
		if j > last {
			text(data[last:j])
		}
		mark(body[:k])
		i = j + len(st.prefix) + k + 1
		last = i
	}
	if last < len(data) {
		text(data[last:])
	}
}

func (st *stripper) hold(before, rest []byte, text func([]byte)) {
	if len(before) > 0 {
		text(before)
	}
	st.held = append([]byte(nil), rest...)
}

// plainBody reports whether b may be (the start of) a marker's body.
func plainBody(b []byte) bool {
	for _, c := range b {
		if c != ';' && c != '-' && (c < '0' || c > '9') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// flush gives up waiting for the rest of a held marker: the held bytes
// were output after all.
func (st *stripper) flush(text func([]byte)) {
	if len(st.held) > 0 {
		held := st.held
		st.held = nil
		text(held)
	}
}

// cleanEcho is what a terminal shows of b on one line, roughly: escape
// sequences, carriage returns and other controls dropped, backspaces
// applied. Line editors redraw the line they echo (zsh writes the first
// character, a backspace, then the whole line); this undoes that.
func cleanEcho(b []byte) string {
	out := make([]rune, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			i += escapeLen(b[i:])
			continue
		case c == '\b':
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case c < 0x20 || c == 0x7f:
		default:
			r, n := utf8.DecodeRune(b[i:])
			out = append(out, r)
			i += n
			continue
		}
		i++
	}
	return string(out)
}

// escapeLen is the length of the escape sequence at the start of b (which
// begins with ESC), or of as much of it as b holds.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return len(b)
	}
	switch b[1] {
	case '[': // CSI: parameters, then a final byte in 0x40..0x7e
		for i := 2; i < len(b); i++ {
			if b[i] >= 0x40 && b[i] <= 0x7e {
				return i + 1
			}
		}
		return len(b)
	case ']', 'P', '_', '^': // strings ended by BEL or ESC \
		for i := 2; i < len(b); i++ {
			if b[i] == 0x07 {
				return i + 1
			}
			if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				return i + 2
			}
		}
		return len(b)
	}
	return 2
}

// editorNoise is what line editors print after the echo of an accepted
// line and before the command's output: bracketed paste and keypad mode
// off, carriage returns. The output of a command starts after it.
func editorNoise(b []byte) int {
	n := 0
	for n < len(b) {
		switch {
		case b[n] == '\r':
			n++
		case bytes.HasPrefix(b[n:], []byte("\x1b[?2004l")):
			n += 8
		case bytes.HasPrefix(b[n:], []byte("\x1b[?1l")):
			n += 5
		case bytes.HasPrefix(b[n:], []byte("\x1b>")):
			n += 2
		default:
			return n
		}
	}
	return n
}
