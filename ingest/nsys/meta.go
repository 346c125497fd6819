package nsys

import (
	"database/sql"
	"fmt"
	"strings"

	"github.com/traceaudit/traceaudit/timeline"
)

// Small tables, read through database/sql before the bulk scan: thread names
// and GPU descriptions.

// threadName is one ThreadNames row, resolved once StringIds is loaded.
type threadName struct {
	nameID, globalTid int64
}

// readThreadNames reads ThreadNames(nameId, priority, globalTid). Rows with
// NULLs are ignored: a missing name only leaves a thread unnamed.
func (x *export) readThreadNames() ([]threadName, error) {
	t := x.tables[tabThreads]
	if t == nil || !t.has("nameId") || !t.has("globalTid") {
		return nil, nil
	}
	rows, err := x.db.Query("SELECT nameId, globalTid FROM " + quote(tabThreads) +
		" WHERE nameId IS NOT NULL AND globalTid IS NOT NULL")
	if err != nil {
		return nil, fmt.Errorf("nsys: %s: %w", tabThreads, err)
	}
	defer rows.Close()
	var out []threadName
	for rows.Next() {
		var tn threadName
		if err := rows.Scan(&tn.nameID, &tn.globalTid); err != nil {
			return nil, fmt.Errorf("nsys: %s row %d: %w", tabThreads, len(out)+1, err)
		}
		out = append(out, tn)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("nsys: %s: %w", tabThreads, err)
	}
	return out, nil
}

// setThreadNames names the host tracks that have events. Tracks are
// declared in time order by the merge; naming a thread without events would
// only declare a track that Build drops.
func setThreadNames(b *timeline.Builder, names []threadName, strs *stringTable) {
	for _, tn := range names {
		s, ok := strs.get(tn.nameID)
		if !ok || s == "" {
			continue
		}
		pid, tid := splitGlobalID(tn.globalTid)
		b.SetThreadName(pid, tid, s)
	}
}

// readDevices reads TARGET_INFO_GPU. Its columns differ across versions (5
// in 2020.5, about 41 from 2022) and the table is absent from 2026.2
// exports, so only the columns present are read.
func (x *export) readDevices() ([]timeline.Device, error) {
	t := x.tables[tabGPU]
	if t == nil || !t.has("id") {
		return nil, nil
	}
	sel := []string{"id"}
	for _, c := range []string{"name", "smCount", "totalMemory"} {
		if t.has(c) {
			sel = append(sel, quote(c))
		} else {
			sel = append(sel, "NULL")
		}
	}
	rows, err := x.db.Query("SELECT " + strings.Join(sel, ", ") + " FROM " + quote(tabGPU) + " WHERE id IS NOT NULL")
	if err != nil {
		return nil, fmt.Errorf("nsys: %s: %w", tabGPU, err)
	}
	defer rows.Close()
	var out []timeline.Device
	for rows.Next() {
		var (
			id       int64
			name     sql.NullString
			sms, mem sql.NullInt64
		)
		if err := rows.Scan(&id, &name, &sms, &mem); err != nil {
			return nil, fmt.Errorf("nsys: %s row %d: %w", tabGPU, len(out)+1, err)
		}
		d := timeline.Device{ID: id, Name: strings.TrimSpace(name.String)}
		if sms.Int64 > 0 && sms.Int64 < 1<<20 {
			d.SMs = int(sms.Int64)
		}
		if mem.Int64 > 0 {
			d.MemoryBytes = mem.Int64
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("nsys: %s: %w", tabGPU, err)
	}
	return out, nil
}

// readMeta reads the product version and the lazy flag from
// META_DATA_EXPORT (2023.3 on) or EXPORT_META_DATA (2022.1-2023.1), and
// whether OS runtime tracing was configured (META_DATA_CAPTURE). Only the
// named keys are read: the capture metadata also holds the environment.
func (x *export) readMeta() error {
	meta := tabMeta
	if x.tables[meta] == nil {
		meta = tabMetaOld
	}
	if x.tables[meta] == nil {
		// nsys 2021 and earlier wrote no export metadata: say so rather
		// than leave the version blank.
		x.version = VersionUnknown
	}
	if x.tables[meta] != nil {
		rows, err := x.db.Query("SELECT name, value FROM " + quote(meta) +
			" WHERE name IN ('EXPORT_PRODUCT_VERSION', 'EXPORT_LAZY', 'EXPORT_PARAM_LAZY')")
		if err != nil {
			return fmt.Errorf("nsys: %s: %w", meta, err)
		}
		for rows.Next() {
			var name, value sql.NullString
			if err := rows.Scan(&name, &value); err != nil {
				rows.Close()
				return fmt.Errorf("nsys: %s: %w", meta, err)
			}
			switch name.String {
			case "EXPORT_PRODUCT_VERSION":
				x.version = sanitizeVersion(value.String)
			case "EXPORT_LAZY", "EXPORT_PARAM_LAZY":
				x.lazy = !strings.EqualFold(strings.TrimSpace(value.String), "false")
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("nsys: %s: %w", meta, err)
		}
	}
	if x.tables[tabCapture] != nil {
		var one int
		err := x.db.QueryRow("SELECT 1 FROM " + quote(tabCapture) +
			" WHERE name LIKE 'OS\\_RUNTIME\\_OPTIONS:%' ESCAPE '\\' LIMIT 1").Scan(&one)
		switch {
		case err == nil:
			x.osrtTraced = true
		case err != sql.ErrNoRows:
			return fmt.Errorf("nsys: %s: %w", tabCapture, err)
		}
	}
	return nil
}

// sanitizeVersion keeps a version string printable and short.
func sanitizeVersion(v string) string {
	v = strings.TrimSpace(v)
	if len(v) > 64 {
		v = v[:64]
	}
	for _, r := range v {
		if r < ' ' || r > '~' {
			return ""
		}
	}
	return v
}
