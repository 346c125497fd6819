// Package sysmem tells how much memory this process can still use: the
// kernel's MemAvailable, or the cgroup's limit when that is lower.
package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Available is the memory this process can use, in bytes, or 0 when it
// cannot be told (not Linux, no /proc).
func Available() int64 {
	avail := memAvailable("/proc/meminfo")
	if lim := cgroupLimit("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"); lim > 0 && (avail == 0 || lim < avail) {
		avail = lim
	}
	return avail
}

// memAvailable reads MemAvailable from a meminfo file, in bytes.
func memAvailable(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "MemAvailable" {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// cgroupLimit is the cgroup v2 limit minus current use, in bytes (0: no
// limit or no cgroup v2).
func cgroupLimit(maxPath, curPath string) int64 {
	b, err := os.ReadFile(maxPath)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0
	}
	lim, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	var cur int64
	if c, err := os.ReadFile(curPath); err == nil {
		cur, _ = strconv.ParseInt(strings.TrimSpace(string(c)), 10, 64)
	}
	return max(lim-cur, 1)
}
