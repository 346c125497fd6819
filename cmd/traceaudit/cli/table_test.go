package cli

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/traceaudit/traceaudit/internal/testing/golden"
	"github.com/traceaudit/traceaudit/internal/testing/testfix"
)

// row is one table row as a plain map, for comparisons.
type row struct {
	count                          int
	total, avg, median, min, maxNS int64
}

func tableRows(t *testing.T, args ...string) (map[string]row, []string, float64) {
	t.Helper()
	out, errOut, code := run(t, append([]string{"stats", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var v struct {
		Schema int   `json:"schema_version"`
		Total  int64 `json:"total_ns"`
		Rows   []struct {
			Name     string  `json:"name"`
			Count    int     `json:"count"`
			TotalNS  int64   `json:"total_ns"`
			AvgNS    int64   `json:"avg_ns"`
			MedianNS int64   `json:"median_ns"`
			MinNS    int64   `json:"min_ns"`
			MaxNS    int64   `json:"max_ns"`
			Share    float64 `json:"share"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Schema != 1 {
		t.Fatalf("%v %d", err, v.Schema)
	}
	m := map[string]row{}
	var order []string
	share := 0.0
	var sum int64
	for i, r := range v.Rows {
		if i > 0 && r.TotalNS > v.Rows[i-1].TotalNS {
			t.Errorf("rows not sorted by total time: %s after %s", r.Name, v.Rows[i-1].Name)
		}
		m[r.Name] = row{r.Count, r.TotalNS, r.AvgNS, r.MedianNS, r.MinNS, r.MaxNS}
		order = append(order, r.Name)
		share += r.Share
		sum += r.TotalNS
	}
	if sum != v.Total {
		t.Errorf("total_ns %d, rows sum to %d", v.Total, sum)
	}
	return m, order, share
}

// sqlTable computes a table the simple way: SQL over the export, the
// median in Go.
func sqlTable(t *testing.T, path, query string) map[string]row {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	durs := map[string][]int64{}
	for rows.Next() {
		var name string
		var d int64
		if err := rows.Scan(&name, &d); err != nil {
			t.Fatal(err)
		}
		durs[name] = append(durs[name], d)
	}
	out := map[string]row{}
	for name, ds := range durs {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		var r row
		r.count, r.min, r.maxNS = len(ds), ds[0], ds[len(ds)-1]
		for _, d := range ds {
			r.total += d
		}
		r.avg = r.total / int64(len(ds))
		if n := len(ds); n%2 == 1 {
			r.median = ds[n/2]
		} else {
			r.median = (ds[n/2-1] + ds[n/2]) / 2
		}
		out[name] = r
	}
	return out
}

// TestStatsTablesMatchSQL checks the kernels, nvtx and os tables of real
// nsys exports against SQL over the export.
func TestStatsTablesMatchSQL(t *testing.T) {
	files := append([]string{testfix.Project("b0_pageable_sync.nsys.sqlite"), testfix.Project("m0_munmap.nsys.sqlite")},
		testfix.SharedGlob(t, "h200", "*.nsys.sqlite")...)
	queries := map[string]string{
		"kernels": `SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = COALESCE(k.shortName, k.demangledName)`,
		"nvtx":    `SELECT COALESCE(n.text, s.value), n.end - n.start FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60) AND n.end IS NOT NULL`,
		"os":      `SELECT s.value, o.end - o.start FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId WHERE o.eventClass NOT IN (31, 32)`,
	}
	for _, path := range files {
		for report, q := range queries {
			t.Run(filepath.Base(path)+"/"+report, func(t *testing.T) {
				got, _, share := tableRows(t, "--report", report, path)
				want := sqlTable(t, path, q)
				if len(got) != len(want) {
					t.Errorf("%d rows, SQL has %d", len(got), len(want))
				}
				for name, w := range want {
					if got[name] != w {
						t.Errorf("%q: got %+v, SQL %+v", name, got[name], w)
					}
				}
				if len(got) > 0 && (share < 0.999 || share > 1.001) {
					t.Errorf("shares sum to %v", share)
				}
			})
		}
	}
}

func TestStatsTableGolden(t *testing.T) {
	b0 := filepath.Join("fixtures", "b0_pageable_sync.nsys.sqlite")
	r0 := filepath.Join("fixtures", "r0_baseline.pt.trace.json.gz")
	for _, c := range []struct{ file, report, format, golden string }{
		{b0, "api", "text", "b0.stats-api.txt"},
		{b0, "copies", "text", "b0.stats-copies.txt"},
		{b0, "copies", "csv", "b0.stats-copies.csv"},
		{r0, "kernels", "text", "r0.stats-kernels.txt"},
		{r0, "nvtx", "csv", "r0.stats-nvtx.csv"},
	} {
		t.Run(c.golden, func(t *testing.T) {
			out, errOut, code := run(t, "stats", "--report", c.report, "--format", c.format, c.file)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if c.format == "csv" {
				recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
				if err != nil || len(recs) < 2 || recs[0][0] != "name" {
					t.Fatalf("CSV: %v %v", err, recs)
				}
				for _, r := range recs[1:] {
					if _, err := strconv.ParseInt(r[2], 10, 64); err != nil {
						t.Errorf("total_ns %q", r[2])
					}
				}
			}
			golden.Check(t, filepath.Join(testfix.Root(), "cmd/traceaudit/cli/testdata", c.golden), []byte(out))
		})
	}
	if _, errOut, code := run(t, "stats", "--format", "csv", b0); code != 2 || !strings.Contains(errOut, `--format "csv"`) {
		t.Errorf("csv without --report: %d %q", code, errOut)
	}
	// The kernels of one run read alike from its Chrome trace and its nsys
	// export (both shortened), and --full-names keeps the trace's own.
	top := func(args ...string) string {
		out, errOut, code := run(t, append([]string{"stats", "--report", "kernels", "--format", "csv"}, args...)...)
		recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if code != 0 || err != nil || len(recs) < 2 {
			t.Fatalf("exit %d, %v: %s", code, err, errOut)
		}
		return recs[1][0]
	}
	nsys := testfix.Shared(t, "h200", "r0_baseline.nsys.sqlite")
	if c, n := top(r0), top(nsys); c != "bn_bw_1C11_kernel_new" || n != c {
		t.Errorf("top kernel %q (Chrome), %q (nsys): want bn_bw_1C11_kernel_new both", c, n)
	}
	if full := top("--full-names", r0); !strings.HasPrefix(full, "void cudnn::bn_bw_1C11_kernel_new<float") {
		t.Errorf("--full-names: %q", full)
	}
}
