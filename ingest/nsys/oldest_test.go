package nsys

import (
	"path/filepath"
	"testing"

	"github.com/traceaudit/traceaudit/timeline"
)

// TestNsys2021Export reads a synthetic export laid out as nsys 2021.x wrote
// them (no public one is in the corpus): no metadata table at all (no
// EXPORT_META_DATA, no META_DATA_EXPORT), no ENUM tables, the kernel table
// without greenContextId and graph columns, the 5-column TARGET_INFO_GPU of
// those versions, runtime rows without callchainId and NVTX without
// textId/domainId. It must read fully, link launches to kernels and copies,
// and report the version as unknown rather than blank.
func TestNsys2021Export(t *testing.T) {
	path := synthDB(t, filepath.Join(t.TempDir(), "nsys2021.sqlite"),
		`CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)`,
		`CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER)`,
		`CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER)`,
		`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
			contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
			demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER)`,
		`CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
			globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL)`,
		`CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
			contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
			bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER)`,
		`CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
			category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER)`,
		`INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'void gemm<float>()'), (3, 'cudaLaunchKernel_v7000'),
			(4, 'cudaMemcpyAsync_v3020'), (5, 'python')`,
		`INSERT INTO TARGET_INFO_GPU VALUES (0, 'Tesla V100-SXM2-32GB', '0000:00:04.0', 1, 6291456)`,
		`INSERT INTO ThreadNames VALUES (5, 0, `+gtid+`)`,
		`INSERT INTO NVTX_EVENTS VALUES (1000, 9000, 59, NULL, NULL, NULL, 'get batch', `+gtid+`, NULL)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000, 1100, 0, `+gtid+`, 11, 4, 0)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1050, 2000, 0, 1, 7, 11, `+gpid+`, 1048576, 1, NULL, 0, 2)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (2100, 2150, 0, `+gtid+`, 12, 3, 0)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2200, 8000, 0, 1, 7, 12, `+gpid+`, 2, 1, NULL)`)
	tl := read(t, path)
	if tl.Source.Version != VersionUnknown {
		t.Errorf("version %q, want %q", tl.Source.Version, VersionUnknown)
	}
	got := kinds(tl)
	want := map[timeline.Kind]int64{timeline.KindRange: 1, timeline.KindAPI: 2, timeline.KindMemcpy: 1, timeline.KindKernel: 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%d %s events, want %d (all: %v)", got[k], k, n, got)
		}
	}
	var kernel, copy *timeline.Event
	for i := range tl.Events {
		switch e := &tl.Events[i]; e.Kind {
		case timeline.KindKernel:
			kernel = e
		case timeline.KindMemcpy:
			copy = e
		}
	}
	if kernel == nil || tl.Name(kernel.Name) != "gemm" || kernel.Link < 0 || tl.Events[kernel.Link].API != timeline.APILaunch {
		t.Errorf("kernel %+v not read or not linked to its launch", kernel)
	}
	if copy == nil || copy.Copy != timeline.CopyHtoD || copy.Src != timeline.MemPageable || copy.Dst != timeline.MemDevice ||
		copy.Bytes != 1<<20 || copy.Link < 0 {
		t.Errorf("copy %+v", copy)
	}
	if len(tl.Devices) != 1 || tl.Devices[0].Name != "Tesla V100-SXM2-32GB" {
		t.Errorf("devices %+v", tl.Devices)
	}
}
