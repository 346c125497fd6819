package sqlitefile

import (
	"encoding/binary"
	"fmt"
)

// Page types of table b-trees.
const (
	pageInterior = 0x05
	pageLeaf     = 0x0d
)

// maxDepth bounds a b-tree's depth (SQLite's own limit is 20).
const maxDepth = 20

// readAhead is how many pages a cursor reads at once for leaves: SQLite
// appends rows to the end of a table, so its leaves mostly follow each
// other in the file.
const readAhead = 32

// level is one interior page on the path from the root to the current
// leaf, and which of its children is being read.
type level struct {
	page  []byte
	pg    uint32
	hdr   int // offset of the b-tree page header (100 on page 1)
	cells int
	idx   int // child being read: cell idx's left child, or the right-most one when idx == cells
}

// Cursor scans the rows of one table b-tree whose rowids lie in a range,
// in rowid order. It decodes the record of the current row up to the
// columns asked for.
type Cursor struct {
	f        *File
	hi       int64
	stack    [maxDepth]level
	depth    int
	loads    int // pages loaded, bounded to catch cycles in a corrupt tree
	ahead    []byte
	first    uint32 // first page in ahead
	nAhead   int    // pages in ahead
	leaf     []byte
	cells    int
	cell     int
	ptrs     int // offset of the leaf's cell pointer array
	leafPage uint32
	done     bool
	err      error

	rowid   int64
	payload []byte
	over    []byte // the payload of a row that spills onto overflow pages
	ovpage  []byte
	ncol    int      // columns decoded
	have    int      // columns the current record holds, up to ncol
	typ     []uint64 // serial type per column
	real    []bool   // REAL affinity per column (nil: none)
	off     []uint32 // offset of each column's value in payload
}

// Scan returns a cursor over the rows of the table whose b-tree starts at
// page root, with rowids in [lo, hi], decoding columns 0 to ncol-1 of each.
func (f *File) Scan(root uint32, lo, hi int64, ncol int) *Cursor {
	c := &Cursor{f: f, hi: hi, ncol: max(ncol, 0)}
	c.typ = make([]uint64, c.ncol)
	c.off = make([]uint32, c.ncol)
	c.ahead = make([]byte, readAhead*f.pageSize)
	if lo > hi {
		c.done = true
		return c
	}
	c.seek(root, lo)
	return c
}

// Err is the error that ended the scan, if any.
func (c *Cursor) Err() error { return c.err }

func (c *Cursor) fail(format string, args ...any) bool {
	c.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	c.done = true
	return false
}

// load returns page pg. Leaves come from the read-ahead buffer; interior
// pages are copied into their level's own buffer by the caller.
func (c *Cursor) load(pg uint32) ([]byte, bool) {
	if c.loads++; c.loads > 2*int(c.f.nPages)+16 {
		return nil, c.fail("page %d: the b-tree loops", pg)
	}
	ps := c.f.pageSize
	if pg < c.first || pg >= c.first+uint32(c.nAhead) || c.nAhead == 0 {
		n, err := c.f.readPages(c.ahead, pg)
		if err != nil {
			c.err, c.done = err, true
			return nil, false
		}
		c.first, c.nAhead = pg, n
	}
	off := int(pg-c.first) * ps
	return c.ahead[off : off+ps], true
}

// header checks the b-tree page header of page p (number pg) and returns
// its type, the offset of the header and the number of cells.
func (c *Cursor) header(p []byte, pg uint32) (typ byte, hdr, cells int, ok bool) {
	if pg == 1 {
		hdr = 100
	}
	if hdr+12 > c.f.usable {
		return 0, 0, 0, c.fail("page %d: too small", pg)
	}
	typ = p[hdr]
	cells = int(binary.BigEndian.Uint16(p[hdr+3:]))
	size := 8
	switch typ {
	case pageLeaf:
	case pageInterior:
		size = 12
	default:
		return 0, 0, 0, c.fail("page %d: page type %d in a table b-tree", pg, typ)
	}
	if hdr+size+2*cells > c.f.usable {
		return 0, 0, 0, c.fail("page %d: %d cells do not fit", pg, cells)
	}
	return typ, hdr, cells, true
}

// cellAt returns the offset of cell i of a page whose cell pointer array
// starts at ptrs.
func (c *Cursor) cellAt(p []byte, ptrs, i int, pg uint32) (int, bool) {
	o := int(binary.BigEndian.Uint16(p[ptrs+2*i:]))
	if o < ptrs || o >= c.f.usable {
		return 0, c.fail("page %d: cell %d at offset %d", pg, i, o)
	}
	return o, true
}

// child returns the page number of child idx of interior level l.
func (c *Cursor) child(l *level) (uint32, bool) {
	pg := l.pg
	var o int
	if l.idx == l.cells {
		o = l.hdr + 8
	} else {
		var ok bool
		if o, ok = c.cellAt(l.page, l.hdr+12, l.idx, pg); !ok {
			return 0, false
		}
		if o+4 > c.f.usable {
			return 0, c.fail("page %d: cell %d runs off the page", pg, l.idx)
		}
	}
	ch := binary.BigEndian.Uint32(l.page[o:])
	if ch < 2 || ch > c.f.nPages {
		return 0, c.fail("page %d: child page %d of %d", pg, ch, c.f.nPages)
	}
	return ch, true
}

// key returns the rowid key of cell i of interior level l.
func (c *Cursor) key(l *level, i int) (int64, bool) {
	pg := l.pg
	o, ok := c.cellAt(l.page, l.hdr+12, i, pg)
	if !ok {
		return 0, false
	}
	end := c.f.usable
	if o+4 >= end {
		return 0, c.fail("page %d: cell %d runs off the page", pg, i)
	}
	v, n := varint(l.page[o+4 : end])
	if n == 0 {
		return 0, c.fail("page %d: cell %d: bad key", pg, i)
	}
	return int64(v), true
}

// descend walks from page pg down to a leaf: to the first rowid >= lo
// when seeking, else to the leftmost leaf.
func (c *Cursor) descend(pg uint32, lo int64, seeking bool) bool {
	for {
		p, ok := c.load(pg)
		if !ok {
			return false
		}
		typ, hdr, cells, ok := c.header(p, pg)
		if !ok {
			return false
		}
		if typ == pageLeaf {
			c.leaf, c.cells, c.ptrs, c.cell = p, cells, hdr+8, 0
			c.leafPage = pg
			if seeking {
				// The first cell whose rowid is >= lo (binary search).
				i, j := 0, cells
				for i < j {
					h := int(uint(i+j) >> 1)
					r, ok := c.leafRowid(h)
					if !ok {
						return false
					}
					if r < lo {
						i = h + 1
					} else {
						j = h
					}
				}
				c.cell = i
			}
			return true
		}
		if c.depth == maxDepth {
			return c.fail("page %d: b-tree deeper than %d", pg, maxDepth)
		}
		l := &c.stack[c.depth]
		l.page = append(l.page[:0], p...)
		l.pg, l.hdr, l.cells, l.idx = pg, hdr, cells, 0
		c.depth++
		if seeking {
			i, j := 0, cells
			for i < j {
				h := int(uint(i+j) >> 1)
				k, ok := c.key(l, h)
				if !ok {
					return false
				}
				if k < lo {
					i = h + 1
				} else {
					j = h
				}
			}
			l.idx = i
		}
		if pg, ok = c.child(l); !ok {
			return false
		}
	}
}

func (c *Cursor) seek(root uint32, lo int64) {
	if root < 1 || root > c.f.nPages {
		c.fail("root page %d of %d", root, c.f.nPages)
		return
	}
	c.descend(root, lo, true)
}

// leafRowid returns the rowid of cell i of the current leaf.
func (c *Cursor) leafRowid(i int) (int64, bool) {
	o, ok := c.cellAt(c.leaf, c.ptrs, i, c.leafPage)
	if !ok {
		return 0, false
	}
	b := c.leaf[o:c.f.usable]
	_, n := varint(b)
	if n == 0 {
		return 0, c.fail("page %d: cell %d: bad payload size", c.leafPage, i)
	}
	r, m := varint(b[n:])
	if m == 0 {
		return 0, c.fail("page %d: cell %d: bad rowid", c.leafPage, i)
	}
	return int64(r), true
}

// Next moves to the next row; it returns false at the end of the range or
// on an error (see Err).
func (c *Cursor) Next() bool {
	for !c.done {
		if c.cell < c.cells {
			i := c.cell
			c.cell++
			return c.row(i)
		}
		// The leaf is done: go up to the first level with a child left,
		// then down to that child's leftmost leaf.
		for {
			if c.depth == 0 {
				c.done = true
				return false
			}
			l := &c.stack[c.depth-1]
			if l.idx < l.cells {
				l.idx++
				break
			}
			c.depth--
		}
		l := &c.stack[c.depth-1]
		pg, ok := c.child(l)
		if !ok || !c.descend(pg, 0, false) {
			return false
		}
	}
	return false
}
