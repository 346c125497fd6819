// Command traceaudit finds out why a GPU training job starves: it reads an
// Nsight Systems SQLite export or a PyTorch profiler Chrome trace, names the
// causes with the time each costs per step, and replays the fixes on a GPU.
package main

import (
	"os"
	"runtime/debug"

	"github.com/traceaudit/traceaudit/cmd/traceaudit/cli"
	"github.com/traceaudit/traceaudit/internal/sysmem"
)

func main() {
	// traceaudit builds one large timeline and then reads it: collecting
	// less often costs little memory here (the garbage is short-lived chunk
	// buffers) and cuts a quarter of the time on large traces (make bench).
	// GOGC still overrides it.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	// Near the machine's memory, collect as often as needed instead.
	if avail := sysmem.Available(); avail > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(avail / 10 * 9)
	}
	os.Exit(cli.Main())
}
