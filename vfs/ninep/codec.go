package ninep

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"sync"
)

// errMalformed is what the decoder reports for any frame that does not
// parse exactly: too short, a count running past the end, trailing bytes.
var errMalformed = errors.New("9p: malformed message")

// errUnknownType is what the decoder reports for a whole frame of a type
// it does not know.
var errUnknownType = errors.New("9p: unknown message type")

// encoder appends little-endian 9P fields to a byte slice.
type encoder struct{ b []byte }

func (e *encoder) u8(v uint8)   { e.b = append(e.b, v) }
func (e *encoder) u16(v uint16) { e.b = binary.LittleEndian.AppendUint16(e.b, v) }
func (e *encoder) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }

func (e *encoder) str(s string) {
	e.u16(uint16(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) qid(q QID) {
	e.u8(q.Type)
	e.u32(q.Version)
	e.u64(q.Path)
}

// data writes a count[4] followed by the bytes.
func (e *encoder) data(p []byte) {
	e.u32(uint32(len(p)))
	e.b = append(e.b, p...)
}

// decoder reads 9P fields from a frame body. The first failure sticks:
// every later read returns zero values and err stays set, so a message's
// decode method is a straight list of reads followed by one check.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errMalformed
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if p := d.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) str() string {
	n := int(d.u16())
	return string(d.take(n))
}

func (d *decoder) qid() QID {
	return QID{Type: d.u8(), Version: d.u32(), Path: d.u64()}
}

// data reads a count[4] and that many bytes, aliasing the frame.
func (d *decoder) data() []byte {
	n := d.u32()
	if uint64(n) > uint64(len(d.b)) {
		d.err = errMalformed
		return nil
	}
	return d.take(int(n))
}

// done reports the decode's error, treating unread bytes as malformed:
// a frame must be exactly one message.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = errMalformed
	}
	return d.err
}

// headerSize is size[4] type[1] tag[2].
const headerSize = 7

// ioHeaderSize is the largest fixed part of Tread/Rread/Twrite before the
// data: size[4] type[1] tag[2] fid[4] offset[8] count[4]. A data count is
// msize minus this.
const ioHeaderSize = headerSize + 4 + 8 + 4

// bufPool recycles frame buffers. Buffers of any size go back; those grown
// past maxPooled are dropped so one huge frame does not pin memory.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 8192); return &b }}

const maxPooled = 1 << 20

func getBuf(n int) *[]byte {
	bp := bufPool.Get().(*[]byte)
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	*bp = (*bp)[:n]
	return bp
}

func putBuf(bp *[]byte) {
	if cap(*bp) <= maxPooled+ioHeaderSize {
		*bp = (*bp)[:0]
		bufPool.Put(bp)
	}
}

// appendFrame encodes m with tag as one frame onto b.
func appendFrame(b []byte, tag uint16, m Message) []byte {
	start := len(b)
	e := encoder{b: b}
	e.u32(0) // size, filled in below
	e.u8(m.msgType())
	e.u16(tag)
	m.encode(&e)
	binary.LittleEndian.PutUint32(e.b[start:], uint32(len(e.b)-start))
	return e.b
}

// decodeFrame parses a frame (size field included) into its tag and
// message. Unknown types and malformed bodies are errors.
func decodeFrame(frame []byte) (uint16, Message, error) {
	if len(frame) < headerSize || binary.LittleEndian.Uint32(frame) != uint32(len(frame)) {
		return 0, nil, errMalformed
	}
	typ, tag := frame[4], binary.LittleEndian.Uint16(frame[5:])
	m := newMessage(typ)
	if m == nil {
		return tag, nil, errUnknownType
	}
	d := decoder{b: frame[headerSize:]}
	m.decode(&d)
	if err := d.done(); err != nil {
		return tag, nil, err
	}
	return tag, m, nil
}

// readBufSize is the read buffer of a connection: big enough to take many
// small frames in one system call; large frames bypass it.
const readBufSize = 64 << 10

func newFrameReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, readBufSize) }

// readFrame reads one whole frame of at most limit bytes into a pooled
// buffer. A size field outside [headerSize, limit] is malformed.
func readFrame(r *bufio.Reader, limit uint32) (*[]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(hdr[:])
	if size < headerSize || size > limit {
		return nil, errMalformed
	}
	bp := getBuf(int(size))
	copy(*bp, hdr[:])
	if _, err := io.ReadFull(r, (*bp)[4:]); err != nil {
		putBuf(bp)
		return nil, err
	}
	return bp, nil
}
