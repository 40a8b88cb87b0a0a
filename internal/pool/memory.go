package pool

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// groupMemory is the memory of one Chromium process group: the browser and
// every renderer, GPU and utility process it started.
type groupMemory struct {
	// RSS sums the resident set sizes. Chromium's processes share most of
	// their pages (the binary, fonts, shared memory), which RSS counts once
	// per process: an idle browser sums to ~2.4 times its PSS.
	RSS int64
	// PSS sums the proportional set sizes, which divide shared pages among
	// their sharers: the memory the group really holds. Zero where the
	// kernel has no smaps_rollup.
	PSS int64
	// Processes counts the members of the group.
	Processes int
}

// measureGroup reads the memory of process group pgid from /proc.
func measureGroup(pgid int) groupMemory {
	var m groupMemory
	pageSize := int64(os.Getpagesize())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		group, rssPages, ok := parseStat(raw)
		if !ok || group != pgid {
			continue
		}
		m.Processes++
		m.RSS += rssPages * pageSize
		m.PSS += readPSS(filepath.Join(filepath.Dir(f), "smaps_rollup"))
	}
	return m
}

// parseStat returns the process group (field 5) and resident pages (field
// 24) of a /proc/PID/stat line. The command name (field 2) may hold spaces
// and parentheses, so fields are counted after its last ')'.
func parseStat(raw []byte) (pgrp int, rssPages int64, ok bool) {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(raw[end+1:])
	// fields[0] is field 3 (state).
	if len(fields) < 22 {
		return 0, 0, false
	}
	g, err1 := strconv.Atoi(string(fields[2]))
	r, err2 := strconv.ParseInt(string(fields[21]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return g, r, true
}

// readPSS returns the Pss line of an smaps_rollup file, in bytes.
func readPSS(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if rest, found := bytes.CutPrefix(line, []byte("Pss:")); found {
			fields := bytes.Fields(rest)
			if len(fields) == 0 {
				return 0
			}
			kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
