//go:build chaos

package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/store"
)

// chaosReport is the file named by CHAOS_REPORT (docs/data/resilience.json
// under `make chaos`). Each chaos test replaces its own entry, so a run of
// one test keeps the others' figures:
//
//	{
//	  "command": "make chaos",
//	  "tests": {
//	    "TestChaosChromiumKills": {
//	      "updated": "2026-11-22T16:00:00Z",   // when the test passed
//	      "go": "go1.26.8", "cpus": 2,         // the machine, roughly
//	      "duration_s": 95.2,                  // the test's wall time
//	      "summary": "one line for humans",
//	      "figures": {"kills": 40, ...}        // numbers, per test (doc_chaos.md)
//	    }
//	  }
//	}
type chaosReport struct {
	Command string                     `json:"command"`
	Tests   map[string]chaosTestReport `json:"tests"`
}

// chaosTestReport is one test's entry in the chaos report.
type chaosTestReport struct {
	Updated   time.Time      `json:"updated"`
	Go        string         `json:"go"`
	CPUs      int            `json:"cpus"`
	DurationS float64        `json:"duration_s"`
	Summary   string         `json:"summary"`
	Figures   map[string]any `json:"figures"`
}

// chaosReportMu serialises the read-merge-write of the report file.
var chaosReportMu sync.Mutex

// recordChaos merges a passed test's figures into the CHAOS_REPORT file,
// if the variable names one. Figures are written only when the test passed.
func recordChaos(t *testing.T, began time.Time, summary string, figures map[string]any) {
	t.Helper()
	path := os.Getenv("CHAOS_REPORT")
	if path == "" {
		t.Logf("chaos figures (set CHAOS_REPORT to record them): %s %v", summary, figures)
		return
	}
	if t.Failed() {
		return
	}
	chaosReportMu.Lock()
	defer chaosReportMu.Unlock()
	rep := chaosReport{}
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		require.NoError(t, json.Unmarshal(raw, &rep), "CHAOS_REPORT %s is not a chaos report", path)
	case errors.Is(err, fs.ErrNotExist):
	default:
		require.NoError(t, err)
	}
	rep.Command = "make chaos"
	if rep.Tests == nil {
		rep.Tests = map[string]chaosTestReport{}
	}
	rep.Tests[t.Name()] = chaosTestReport{
		Updated: time.Now().UTC().Truncate(time.Second), Go: runtime.Version(), CPUs: runtime.NumCPU(),
		DurationS: roundS(time.Since(began)), Summary: summary, Figures: figures,
	}
	out, err := json.MarshalIndent(rep, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, append(out, '\n'), 0o644))
	require.NoError(t, os.Rename(tmp, path))
	t.Logf("chaos figures recorded in %s: %s", path, summary)
}

func roundS(d time.Duration) float64 {
	return float64(d.Round(100*time.Millisecond).Milliseconds()) / 1000
}

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid int
	state     byte
	start     string // start time in clock ticks: tells a reused pid apart
	cmdline   string
}

// procs reads every live process.
func procs() map[int]proc {
	out := map[int]proc{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... field 22 is starttime; comm may hold
		// spaces and parentheses, so split after the last ')'.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			continue
		}
		f := strings.Fields(s[i+2:])
		if len(f) < 20 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(d + "/cmdline")
		out[pid] = proc{pid: pid, ppid: ppid, state: f[0][0], start: f[19], cmdline: strings.ReplaceAll(string(cmd), "\x00", " ")}
	}
	return out
}

// chromiumTree lists the live Chromium processes of a server: those whose
// command line names its browsers dir (each browser's main process) and all
// their descendants (zygotes, renderers, GPU and utility processes, whose
// command lines need not name the dir). Zombies are left out.
func chromiumTree(browsersDir string) []proc {
	all := procs()
	in := map[int]bool{}
	for pid, p := range all {
		if strings.Contains(p.cmdline, browsersDir) && !strings.Contains(p.cmdline, "go test") && p.state != 'Z' {
			in[pid] = true
		}
	}
	for grew := true; grew; {
		grew = false
		for pid, p := range all {
			if !in[pid] && in[p.ppid] && p.state != 'Z' {
				in[pid], grew = true, true
			}
		}
	}
	out := make([]proc, 0, len(in))
	for pid := range in {
		out = append(out, all[pid])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// isBrowserMain tells a browser's main process from its helpers, which
// Chromium starts with --type=.
func isBrowserMain(p proc) bool { return !strings.Contains(p.cmdline, "--type=") }

// zombieChildren lists the test process's children that have exited and
// were never reaped.
func zombieChildren() []proc {
	var out []proc
	self := os.Getpid()
	for _, p := range procs() {
		if p.ppid == self && p.state == 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// stillAlive returns those of seen that still run (same pid and start time).
func stillAlive(seen map[int]proc) []proc {
	now := procs()
	var out []proc
	for pid, p := range seen {
		if q, ok := now[pid]; ok && q.start == p.start && q.state != 'Z' {
			out = append(out, q)
		}
	}
	return out
}

// sigkill sends SIGKILL to one process; a process that is already gone is
// not an error.
func sigkill(pid int) bool {
	return syscall.Kill(pid, syscall.SIGKILL) == nil
}

// waitTerminal polls GetRun until the run is terminal or ctx ends, and
// returns the last state seen.
func waitTerminal(ctx context.Context, client wfv1.RunServiceClient, runID string) (*wfv1.Run, error) {
	var last *wfv1.Run
	for {
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		run, err := client.GetRun(callCtx, &wfv1.GetRunRequest{RunId: runID})
		cancel()
		if err == nil {
			last = run
			if store.IsTerminal(run.Status) {
				return run, nil
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				return nil, err
			}
			return last, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// outcome names a finished run's status, with the error category for ERROR.
func outcome(run *wfv1.Run) string {
	s := strings.TrimPrefix(run.Status.String(), "RUN_STATUS_")
	if run.Status == wfv1.RunStatus_RUN_STATUS_ERROR {
		s += "/" + strings.TrimPrefix(run.GetError().GetCategory().String(), "ERROR_CATEGORY_")
	}
	return s
}

// describeCounts renders counts as "A 3, B 1", largest first.
func describeCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
