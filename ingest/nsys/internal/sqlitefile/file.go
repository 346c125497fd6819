// Package sqlitefile reads the rows of SQLite 3 tables straight from the
// database file, following the documented file format
// (https://www.sqlite.org/fileformat.html): table b-tree pages, cells,
// overflow chains and the record format. It does no SQL, no locking, no
// journal or WAL handling and no schema parsing: the caller finds a table's
// root page and column layout through SQLite itself and uses this package
// only for the bulk scan, where SQLite's virtual machine (in the pure-Go
// translation traceaudit uses) costs several times the decoding itself.
//
// It reads only files it can read exactly as SQLite would: UTF-8 text, a
// rollback journal (not WAL) and no journal file next to the database.
// Anything else is ErrUnsupported; a malformed page, cell or record is
// ErrCorrupt. In both cases the caller reads the table through SQLite
// instead, which then decides. Nothing here panics on a corrupt file, and
// the file is never written.
package sqlitefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrUnsupported is returned (wrapped) for a database this package does
// not read: WAL mode, a text encoding other than UTF-8, a journal next to
// the file, unusual header values.
var ErrUnsupported = errors.New("unsupported database file")

// ErrCorrupt is returned (wrapped) for a malformed header, page, cell or
// record.
var ErrCorrupt = errors.New("malformed database file")

// magic starts every SQLite 3 database file.
const magic = "SQLite format 3\x00"

// File is a database file opened for reading table b-trees. Its methods may
// be called from several goroutines; each Cursor belongs to one.
type File struct {
	f        *os.File
	pageSize int    // bytes per page
	usable   int    // pageSize less the bytes reserved at each page's end
	nPages   uint32 // pages in the database
}

// Open opens path read-only and checks its header.
func Open(path string) (*File, error) {
	if _, err := os.Lstat(path + "-journal"); err == nil {
		return nil, fmt.Errorf("%w: a journal file is next to it", ErrUnsupported)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	var hdr [100]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	x, err := parseHeader(hdr[:], st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	x.f = f
	return x, nil
}

// parseHeader checks the 100-byte file header of a file of size bytes.
func parseHeader(h []byte, size int64) (*File, error) {
	if string(h[:16]) != magic {
		return nil, fmt.Errorf("%w: not an SQLite 3 file", ErrCorrupt)
	}
	ps := int(binary.BigEndian.Uint16(h[16:]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 {
		return nil, fmt.Errorf("%w: page size %d", ErrCorrupt, ps)
	}
	if h[18] != 1 || h[19] != 1 {
		return nil, fmt.Errorf("%w: file format versions %d/%d (WAL)", ErrUnsupported, h[18], h[19])
	}
	usable := ps - int(h[20])
	if usable < 480 {
		return nil, fmt.Errorf("%w: usable page size %d", ErrUnsupported, usable)
	}
	if h[21] != 64 || h[22] != 32 || h[23] != 32 {
		return nil, fmt.Errorf("%w: payload fractions %d/%d/%d", ErrUnsupported, h[21], h[22], h[23])
	}
	if enc := binary.BigEndian.Uint32(h[56:]); enc != 1 {
		return nil, fmt.Errorf("%w: text encoding %d (not UTF-8)", ErrUnsupported, enc)
	}
	filePages := size / int64(ps)
	if filePages > 1<<31 {
		return nil, fmt.Errorf("%w: %d pages", ErrUnsupported, filePages)
	}
	n := uint32(filePages)
	// The header's page count is valid when the change counter matches
	// "version-valid-for" (SQLite 3.7.0 and later); SQLite then uses it.
	if hn := binary.BigEndian.Uint32(h[28:]); hn != 0 && binary.BigEndian.Uint32(h[24:]) == binary.BigEndian.Uint32(h[92:]) {
		if hn > n {
			return nil, fmt.Errorf("%w: %d pages in the header, %d in the file", ErrCorrupt, hn, n)
		}
		n = hn
	}
	return &File{pageSize: ps, usable: usable, nPages: n}, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// PageSize is the database's page size in bytes.
func (f *File) PageSize() int { return f.pageSize }

// Pages is the number of pages in the database.
func (f *File) Pages() uint32 { return f.nPages }

// readPages reads pages first, first+1, ... into buf (a whole number of
// pages, at least one) and returns how many it read, all complete and
// within the database.
func (f *File) readPages(buf []byte, first uint32) (int, error) {
	if first == 0 || first > f.nPages {
		return 0, fmt.Errorf("%w: page %d of %d", ErrCorrupt, first, f.nPages)
	}
	want := min(len(buf)/f.pageSize, int(f.nPages-first)+1)
	n, err := f.f.ReadAt(buf[:want*f.pageSize], int64(first-1)*int64(f.pageSize))
	if got := n / f.pageSize; got > 0 {
		return got, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return 0, fmt.Errorf("%w: page %d: %v", ErrCorrupt, first, err)
}
