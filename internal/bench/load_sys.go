package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// pssSample is the service's memory at one moment, in bytes: this process
// (the in-process server, with the benchmark's client and site), its
// Chromium processes and its Postgres.
type pssSample struct {
	server, chromium, postgres int64
}

func (p pssSample) total() int64 { return p.server + p.chromium + p.postgres }

// servicePSS measures this process and the process trees of its children,
// told apart by the command name (Postgres is "postgres"; anything else
// is the browser).
func servicePSS() (pssSample, error) {
	var s pssSample
	self, err := readPSS(os.Getpid())
	if err != nil {
		return s, err
	}
	s.server = self
	for _, pid := range childrenOf(processes(), os.Getpid()) {
		n, err := treePSS(pid)
		if err != nil {
			continue // exited meanwhile
		}
		if comm(pid) == "postgres" {
			s.postgres += n
		} else {
			s.chromium += n
		}
	}
	return s, nil
}

// comm returns a process's command name ("" when gone).
func comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// clockTick is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTick = 100

// treeCPU is the CPU time of root and its descendants: each process's own
// user and system time and that of its children it has waited for
// (fields 14 to 17 of /proc/PID/stat), so a process that exited within
// the tree still counts, in its parent.
func treeCPU(root int) time.Duration {
	var ticks uint64
	for _, pid := range tree(processes(), root) {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		ticks += statTicks(raw)
	}
	return time.Duration(ticks) * time.Second / clockTick
}

// statTicks sums utime, stime, cutime and cstime of a /proc/PID/stat line.
func statTicks(raw []byte) uint64 {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0
	}
	f := bytes.Fields(raw[end+1:]) // f[0] is field 3
	if len(f) < 15 {
		return 0
	}
	var sum uint64
	for _, i := range []int{11, 12, 13, 14} {
		n, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err == nil && n > 0 {
			sum += uint64(n)
		}
	}
	return sum
}

// cpuTimes are the machine's CPU counters (/proc/stat, all cores), in
// ticks.
type cpuTimes struct {
	busy, total uint64
}

// machineCPU reads the aggregate line of /proc/stat.
func machineCPU() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return parseCPULine(line)
}

// parseCPULine parses "cpu user nice system idle iowait irq softirq steal
// ...": idle and iowait are not busy; guest time is already in user.
func parseCPULine(line []byte) cpuTimes {
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return cpuTimes{}
	}
	var t cpuTimes
	for i, v := range f[1:] {
		if i >= 8 { // guest and guest_nice are counted in user and nice
			break
		}
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			continue
		}
		t.total += n
		if i != 3 && i != 4 {
			t.busy += n
		}
	}
	return t
}

// busyShare is the share of CPU time busy between before and t.
func (t cpuTimes) busyShare(before cpuTimes) float64 {
	total := t.total - before.total
	if total == 0 || t.total < before.total {
		return 0
	}
	return float64(t.busy-before.busy) / float64(total)
}
