package main

import (
	"bufio"
	"compress/gzip"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	_ "modernc.org/sqlite"
)

// field is a number inside one event's JSON text that tiling shifts.
type field struct {
	off, end int   // byte range of the raw value in the event text
	ns       int64 // for timestamps: the value in ns
	n        int64 // for ids: the value
	ts       bool
}

// tileChrome writes a Chrome trace made of n copies of the events of src
// (a .json.gz), each copy shifted in time by the original's span plus 1 ms,
// with correlation ids, flow ids and external ids kept unique. The other
// top-level keys are kept. It returns the bytes written and the events.
func tileChrome(src, dst string, n int) (int64, int64, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, 0, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return 0, 0, err
	}
	doc := gjson.ParseBytes(data)
	type ev struct {
		raw    string
		fields []field
	}
	var evs []ev
	var lo, hi int64 = 1 << 62, -1 << 62
	var maxID int64
	doc.Get("traceEvents").ForEach(func(_, e gjson.Result) bool {
		x := ev{raw: e.Raw}
		add := func(r gjson.Result, ts bool) {
			if !r.Exists() || r.Type != gjson.Number {
				return
			}
			off := r.Index - e.Index
			fd := field{off: off, end: off + len(r.Raw), ts: ts}
			if ts {
				fd.ns = usToNS(r.Raw)
			} else {
				fd.n = r.Int()
				maxID = max(maxID, fd.n)
			}
			x.fields = append(x.fields, fd)
		}
		ts := e.Get("ts")
		add(ts, true)
		if ts.Exists() {
			t := usToNS(ts.Raw)
			lo = min(lo, t)
			hi = max(hi, t+usToNS(e.Get("dur").Raw))
		}
		add(e.Get("id"), false)
		add(e.Get("args.correlation"), false)
		add(e.Get(`args.External id`), false)
		add(e.Get(`args.external id`), false)
		// Offsets must be increasing for the splice below.
		for i := 1; i < len(x.fields); i++ {
			for j := i; j > 0 && x.fields[j].off < x.fields[j-1].off; j-- {
				x.fields[j], x.fields[j-1] = x.fields[j-1], x.fields[j]
			}
		}
		evs = append(evs, x)
		return true
	})
	period := hi - lo + 1_000_000
	idStep := maxID + 1
	out, err := os.Create(dst)
	if err != nil {
		return 0, 0, err
	}
	w := bufio.NewWriterSize(out, 4<<20)
	w.WriteString("{\n")
	doc.ForEach(func(k, v gjson.Result) bool {
		if k.Str != "traceEvents" {
			fmt.Fprintf(w, "  %s: %s,\n", k.Raw, v.Raw)
		}
		return true
	})
	w.WriteString(`  "traceEvents": [` + "\n")
	var count int64
	for k := 0; k < n; k++ {
		for i, e := range evs {
			if k > 0 || i > 0 {
				w.WriteString(",\n")
			}
			at := 0
			for _, fd := range e.fields {
				w.WriteString(e.raw[at:fd.off])
				if fd.ts {
					w.WriteString(nsToUS(fd.ns + int64(k)*period))
				} else {
					w.WriteString(strconv.FormatInt(fd.n+int64(k)*idStep, 10))
				}
				at = fd.end
			}
			w.WriteString(e.raw[at:])
			count++
		}
	}
	w.WriteString("\n]}\n")
	if err := w.Flush(); err != nil {
		out.Close()
		return 0, 0, err
	}
	st, _ := out.Stat()
	return st.Size(), count, out.Close()
}

// usToNS converts a decimal µs literal to ns (exact for up to 3 decimals).
func usToNS(s string) int64 {
	ip, fp, _ := strings.Cut(s, ".")
	n, _ := strconv.ParseInt(ip, 10, 64)
	fp = (fp + "000")[:3]
	f, _ := strconv.ParseInt(fp, 10, 64)
	return n*1000 + f
}

func nsToUS(ns int64) string { return fmt.Sprintf("%d.%03d", ns/1000, ns%1000) }

// tileNsys copies an nsys export and appends n-1 shifted copies of its
// activity rows (kernels, copies, memsets, syncs, API calls, OS calls,
// NVTX), with correlation ids kept unique. It returns the GPU and API rows.
func tileNsys(src, dst string, n int) (int64, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return 0, err
	}
	db, err := sql.Open("sqlite", "file:"+dst)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	tables := []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
		"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API", "NVTX_EVENTS"}
	var lo, hi, maxCorr int64
	if err := db.QueryRow(`SELECT min(start), max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME`).Scan(&lo, &hi); err != nil {
		return 0, err
	}
	if err := db.QueryRow(`SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME`).Scan(&maxCorr); err != nil {
		return 0, err
	}
	period := hi - lo + 1_000_000
	tx, err := db.Begin()
	if err != nil {
		return 0, err
	}
	for _, t := range tables {
		rows, err := tx.Query("SELECT name FROM pragma_table_info(?)", t)
		if err != nil {
			return 0, err
		}
		var cols, sel []string
		for rows.Next() {
			var c string
			rows.Scan(&c)
			cols = append(cols, c)
			switch c {
			case "start", "end":
				sel = append(sel, fmt.Sprintf(`"%s" + ?1`, c))
			case "correlationId":
				sel = append(sel, "correlationId + ?2")
			default:
				sel = append(sel, `"`+c+`"`)
			}
		}
		rows.Close()
		if len(cols) == 0 {
			continue
		}
		q := fmt.Sprintf(`INSERT INTO %s ("%s") SELECT %s FROM %s WHERE rowid <= ?3`, t, strings.Join(cols, `","`), strings.Join(sel, ","), t)
		var base int64
		if err := tx.QueryRow("SELECT max(rowid) FROM " + t).Scan(&base); err != nil {
			continue
		}
		for k := 1; k < n; k++ {
			if _, err := tx.Exec(q, int64(k)*period, int64(k)*(maxCorr+1), base); err != nil {
				return 0, fmt.Errorf("%s: %w", t, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	var rowsN int64
	for _, t := range tables[:5] {
		var c int64
		if db.QueryRow("SELECT count(*) FROM "+t).Scan(&c) == nil {
			rowsN += c
		}
	}
	return rowsN, nil
}
