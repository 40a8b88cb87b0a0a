package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// procInfo is what /proc/PID/stat tells about a process.
type procInfo struct {
	pid, ppid, pgrp int
	// start is the start time in clock ticks since boot: with pid, it
	// names a process, even after the pid is reused.
	start uint64
}

// parseProcStat reads pid, ppid (field 4), pgrp (field 5) and start time
// (field 22) of a /proc/PID/stat line. The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseProcStat(raw []byte) (procInfo, bool) {
	open := bytes.IndexByte(raw, '(')
	end := bytes.LastIndexByte(raw, ')')
	if open < 1 || end < open {
		return procInfo{}, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(raw[:open])))
	if err != nil {
		return procInfo{}, false
	}
	fields := bytes.Fields(raw[end+1:])
	if len(fields) < 20 { // fields[0] is field 3 (state)
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	pgrp, err2 := strconv.Atoi(string(fields[2]))
	start, err3 := strconv.ParseUint(string(fields[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, pgrp: pgrp, start: start}, true
}

// processes lists the live processes.
func processes() []procInfo {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := make([]procInfo, 0, len(stats))
	for _, f := range stats {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		if p, ok := parseProcStat(raw); ok {
			out = append(out, p)
		}
	}
	return out
}

// tree returns root and its descendants among procs. Playwright starts the
// browser in a session of its own, so a process group does not reach it;
// parenthood does.
func tree(procs []procInfo, root int) []int {
	children := map[int][]int{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// childrenOf returns the direct children of pid.
func childrenOf(procs []procInfo, pid int) []int {
	var out []int
	for _, p := range procs {
		if p.ppid == pid {
			out = append(out, p.pid)
		}
	}
	return out
}

// treePSS sums the proportional set size (shared pages divided among their
// sharers, so a process tree's memory is not counted many times over) of
// root and its descendants, in bytes.
func treePSS(root int) (int64, error) {
	var total int64
	for _, pid := range tree(processes(), root) {
		n, err := readPSS(pid)
		if err != nil {
			if pid == root {
				return 0, err
			}
			continue // a helper that exited meanwhile
		}
		total += n
	}
	return total, nil
}

// readPSS returns the Pss of /proc/PID/smaps_rollup in bytes.
func readPSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, fmt.Errorf("read memory of process %d: %w", pid, err)
	}
	defer f.Close()
	return parsePSS(f)
}

func parsePSS(f *os.File) (int64, error) {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("Pss:")); ok {
			fields := bytes.Fields(rest)
			if len(fields) == 0 {
				break
			}
			kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
			if err != nil {
				break
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no Pss line in %s", f.Name())
}

// descendants returns root and every process below it, as they are now.
func descendants(root int) []procInfo {
	procs := processes()
	byPid := make(map[int]procInfo, len(procs))
	for _, p := range procs {
		byPid[p.pid] = p
	}
	var out []procInfo
	for _, pid := range tree(procs, root) {
		if p, ok := byPid[pid]; ok {
			out = append(out, p)
		}
	}
	return out
}

// killSurvivors kills those of procs that still run: same pid and same
// start time, so a pid reused meanwhile by another process is left alone.
func killSurvivors(procs []procInfo) {
	live := map[int]procInfo{}
	for _, p := range processes() {
		live[p.pid] = p
	}
	for _, p := range procs {
		if q, ok := live[p.pid]; ok && q.start == p.start {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}
