package sqlitefile

import (
	"encoding/binary"
	"math"
	"strings"
)

// Type is the storage class of a value, as sqlite3_column_type reports it.
type Type uint8

// Storage classes.
const (
	Null Type = iota
	Integer
	Float
	Text
	Blob
)

// maxPayload bounds a row's size (SQLite's default SQLITE_MAX_LENGTH is
// 10^9 bytes).
const maxPayload = 1 << 30

// row reads cell i of the current leaf: its rowid and payload (following
// the overflow chain when it spills), then the record header.
func (c *Cursor) row(i int) bool {
	pg := c.leafPage
	o, ok := c.cellAt(c.leaf, c.ptrs, i, pg)
	if !ok {
		return false
	}
	b := c.leaf[o:c.f.usable]
	size, n := varint(b)
	if n == 0 {
		return c.fail("page %d: cell %d: bad payload size", pg, i)
	}
	r, m := varint(b[n:])
	if m == 0 {
		return c.fail("page %d: cell %d: bad rowid", pg, i)
	}
	if int64(r) > c.hi {
		c.done = true
		return false
	}
	c.rowid = int64(r)
	b = b[n+m:]
	if size > maxPayload {
		return c.fail("page %d: cell %d: payload of %d bytes", pg, i, size)
	}
	p := int(size)
	u := c.f.usable
	if p <= u-35 {
		if p > len(b) {
			return c.fail("page %d: cell %d runs off the page", pg, i)
		}
		c.payload = b[:p]
		return c.record(pg, i)
	}
	// The part kept on the leaf (the file format's "local payload").
	minLocal := (u-12)*32/255 - 23
	local := minLocal + (p-minLocal)%(u-4)
	if local > u-35 {
		local = minLocal
	}
	if local+4 > len(b) {
		return c.fail("page %d: cell %d runs off the page", pg, i)
	}
	if p-local > int(c.f.nPages)*(u-4) {
		return c.fail("page %d: cell %d: payload of %d bytes", pg, i, p)
	}
	c.over = append(c.over[:0], b[:local]...)
	next := binary.BigEndian.Uint32(b[local:])
	if c.ovpage == nil {
		c.ovpage = make([]byte, c.f.pageSize)
	}
	for len(c.over) < p {
		if next < 2 {
			return c.fail("page %d: cell %d: overflow chain ends early", pg, i)
		}
		if c.loads++; c.loads > 2*int(c.f.nPages)+16 {
			return c.fail("page %d: cell %d: the overflow chain loops", pg, i)
		}
		if _, err := c.f.readPages(c.ovpage, next); err != nil {
			c.err, c.done = err, true
			return false
		}
		k := min(p-len(c.over), u-4)
		c.over = append(c.over, c.ovpage[4:4+k]...)
		next = binary.BigEndian.Uint32(c.ovpage)
	}
	c.payload = c.over
	return c.record(pg, i)
}

// record parses the record header of the current payload up to c.ncol
// columns.
func (c *Cursor) record(pg uint32, i int) bool {
	p := c.payload
	h, n := varint(p)
	if n == 0 || h < uint64(n) || h > uint64(len(p)) {
		return c.fail("page %d: cell %d: bad record header", pg, i)
	}
	hdr := p[:h]
	pos, off, k := n, uint64(h), 0
	for k < c.ncol && pos < len(hdr) {
		t, m := varint(hdr[pos:])
		if m == 0 {
			return c.fail("page %d: cell %d: bad record header", pg, i)
		}
		pos += m
		var sz uint64
		switch {
		case t <= 4:
			sz = t
		case t == 5:
			sz = 6
		case t == 6, t == 7:
			sz = 8
		case t == 8, t == 9:
		case t == 10, t == 11:
			return c.fail("page %d: cell %d: serial type %d", pg, i, t)
		default:
			sz = (t - 12) / 2
		}
		if sz > uint64(len(p))-off {
			return c.fail("page %d: cell %d: column %d runs past the record", pg, i, k)
		}
		c.typ[k], c.off[k] = t, uint32(off)
		off += sz
		k++
	}
	c.have = k
	return true
}

// Has reports whether the current record holds column i (one of the
// columns decoded): a row written before a column was added does not.
func (c *Cursor) Has(i int) bool { return uint(i) < uint(c.have) }

// Rowid is the current row's rowid.
func (c *Cursor) Rowid() int64 { return c.rowid }

// Type is the storage class of column i of the current row. A column the
// record does not hold (added to the table after the row was written) is
// Null; a stored NaN reads as Null, as in SQLite.
func (c *Cursor) Type(i int) Type {
	if uint(i) >= uint(c.have) {
		return Null
	}
	switch t := c.typ[i]; {
	case t == 0:
		return Null
	case t <= 6 || t == 8 || t == 9:
		if c.real != nil && c.real[i] {
			return Float
		}
		return Integer
	case t == 7:
		if math.IsNaN(c.Float(i)) {
			return Null
		}
		return Float
	case t&1 == 0:
		return Blob
	default:
		return Text
	}
}

// Int is column i as an integer when its storage class is Integer (else 0).
func (c *Cursor) Int(i int) int64 {
	if uint(i) >= uint(c.have) || (c.real != nil && c.real[i]) {
		return 0
	}
	return c.int(i)
}

// int decodes column i's integer serial types.
func (c *Cursor) int(i int) int64 {
	b := c.payload[c.off[i]:]
	switch c.typ[i] {
	case 1:
		return int64(int8(b[0]))
	case 2:
		return int64(int16(binary.BigEndian.Uint16(b)))
	case 3:
		return int64(int32(uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8) >> 8)
	case 4:
		return int64(int32(binary.BigEndian.Uint32(b)))
	case 5:
		return int64(uint64(binary.BigEndian.Uint16(b))<<48|uint64(binary.BigEndian.Uint32(b[2:]))<<16) >> 16
	case 6:
		return int64(binary.BigEndian.Uint64(b))
	case 9:
		return 1
	}
	return 0
}

// Float is column i as a float when its storage class is Float (else 0).
func (c *Cursor) Float(i int) float64 {
	if uint(i) >= uint(c.have) {
		return 0
	}
	if t := c.typ[i]; t != 7 {
		if c.real != nil && c.real[i] && (t <= 6 || t == 8 || t == 9) {
			return float64(c.int(i))
		}
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(c.payload[c.off[i]:]))
}

// Bytes is column i's text or blob, valid until the next call of Next
// (nil for other storage classes).
func (c *Cursor) Bytes(i int) []byte {
	if uint(i) >= uint(c.have) || c.typ[i] < 12 {
		return nil
	}
	t := c.typ[i]
	n := (t - 12) / 2
	o := uint64(c.off[i])
	return c.payload[o : o+n : o+n]
}

// varint decodes an SQLite variable-length integer (1 to 9 bytes, big
// endian, 7 bits a byte, the ninth byte whole); n is 0 when b ends first.
func varint(b []byte) (v uint64, n int) {
	for i := 0; i < 8; i++ {
		if i >= len(b) {
			return 0, 0
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	if len(b) < 9 {
		return 0, 0
	}
	return v<<8 | uint64(b[8]), 9
}

// SetReal declares that column i has REAL affinity: an integral value that
// SQLite stored there as an integer (to save space) reads as a Float, as
// it does through SQLite. Call it before the first Next.
func (c *Cursor) SetReal(i int) {
	if uint(i) >= uint(c.ncol) {
		return
	}
	if c.real == nil {
		c.real = make([]bool, c.ncol)
	}
	c.real[i] = true
}

// RealAffinity reports whether a column declared with type decl has REAL
// affinity under SQLite's rules (https://www.sqlite.org/datatype3.html,
// 3.1): no "INT", "CHAR", "CLOB", "TEXT" or "BLOB" in it and one of
// "REAL", "FLOA", "DOUB".
func RealAffinity(decl string) bool {
	d := strings.ToUpper(decl)
	has := func(s string) bool { return strings.Contains(d, s) }
	switch {
	case has("INT"), has("CHAR"), has("CLOB"), has("TEXT"), has("BLOB"), d == "":
		return false
	}
	return has("REAL") || has("FLOA") || has("DOUB")
}
