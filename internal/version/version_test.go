package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261130122018-3caeac6abcde+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3caeac6abcdef0123456789"}, {Key: "vcs.modified", Value: "true"}}}
	var i Info
	fromBuildInfo(&i, bi)
	if i.Version != "v0.0.0-20261130122018-3caeac6abcde+dirty" || i.Commit != "3caeac6abcde-dirty" || i.Go != "go1.26.8" {
		t.Errorf("%+v", i)
	}
	// What -ldflags stamped wins.
	i = Info{Version: "v0.3.0", Commit: "abc"}
	fromBuildInfo(&i, bi)
	if i.Version != "v0.3.0" || i.Commit != "abc" {
		t.Errorf("stamped values replaced: %+v", i)
	}
	// A plain build without VCS information.
	i = Info{}
	fromBuildInfo(&i, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}})
	if i.Version != "" || i.Commit != "" {
		t.Errorf("%+v", i)
	}
}

func TestGetAndTool(t *testing.T) {
	version, commit = "v1.2.3", "0123456789ab"
	defer func() { version, commit = "", "" }()
	i := Get()
	if i.Version != "v1.2.3" || i.Commit != "0123456789ab" || i.Platform != runtime.GOOS+"/"+runtime.GOARCH || !strings.HasPrefix(i.Go, "go") {
		t.Errorf("%+v", i)
	}
	if got := Tool(); got != "v1.2.3+0123456789ab" {
		t.Errorf("Tool() = %q", got)
	}
	if s := i.String(); s != "traceaudit v1.2.3 (commit 0123456789ab, "+i.Go+", "+i.Platform+")" {
		t.Errorf("String() = %q", s)
	}
	version, commit = "v0.0.0-20261130122018-0123456789ab", "0123456789ab-dirty"
	if got := Tool(); got != "v0.0.0-20261130122018-0123456789ab" {
		t.Errorf("a version naming the commit: Tool() = %q", got)
	}
	version, commit = "", ""
	if got := Tool(); got != "devel" && !strings.Contains(got, "+") {
		t.Errorf("unstamped Tool() = %q", got)
	}
}
