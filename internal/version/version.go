// Package version says which traceaudit this is: the module version, the
// commit and the Go version it was built with, and the schema version of
// its JSON documents.
//
// `make build` and `make dist` stamp Version and Commit with -ldflags -X;
// a plain `go build` in a clone falls back to the build information the Go
// toolchain records (runtime/debug.ReadBuildInfo: the module's pseudo
// version and the VCS revision), and to "devel" and "unknown" without it.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Schema is the version of traceaudit's JSON documents (design.md). It is
// raised only when a field is removed or changes meaning, which the
// contract forbids; adding fields keeps it.
const Schema = 1

// Stamped at link time: go build -ldflags "-X <pkg>.version=v0.3.0 -X <pkg>.commit=abc123".
var (
	version string
	commit  string
)

// Info is one build's identity.
type Info struct {
	// Version is the module version ("v0.3.0", a Go pseudo version, or
	// "devel").
	Version string `json:"version"`
	// Commit is the VCS revision, with "-dirty" when the tree had
	// uncommitted changes ("unknown" when not recorded).
	Commit string `json:"commit"`
	// Go is the Go toolchain version ("go1.26.8").
	Go string `json:"go"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns this binary's identity.
func Get() Info {
	info := Info{Version: version, Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fromBuildInfo(&info, bi)
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// fromBuildInfo fills what -ldflags did not stamp from the toolchain's
// build information.
func fromBuildInfo(info *Info, bi *debug.BuildInfo) {
	if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		info.Go = bi.GoVersion
	}
	if info.Commit != "" {
		return
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	info.Commit = rev
}

// Tool is the tool_version of JSON documents: the version, and the commit
// when the version does not already name it ("v0.3.0", "devel+3caeac6abcde").
func Tool() string {
	i := Get()
	if i.Commit == "unknown" || strings.Contains(i.Version, shortRev(i.Commit)) {
		return i.Version
	}
	return i.Version + "+" + i.Commit
}

func shortRev(c string) string {
	c = strings.TrimSuffix(c, "-dirty")
	if len(c) > 12 {
		c = c[:12]
	}
	return c
}

// String is the `traceaudit version` line.
func (i Info) String() string {
	return fmt.Sprintf("traceaudit %s (commit %s, %s, %s)", i.Version, i.Commit, i.Go, i.Platform)
}
