// Command traceaudit finds out why a GPU training job starves: it reads an
// Nsight Systems SQLite export or a PyTorch profiler Chrome trace, names the
// causes with the time each costs per step, and replays the fixes on a GPU.
package main

import (
	"os"

	"github.com/traceaudit/traceaudit/cmd/traceaudit/cli"
)

func main() { os.Exit(cli.Main()) }
