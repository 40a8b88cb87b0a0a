package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a run happened; figures of two machines do not
// compare.
type Machine struct {
	// CPU is the processor model; Cores the logical CPUs Go sees.
	CPU   string
	Cores int
	// MemoryBytes is the total RAM.
	MemoryBytes int64
	// OS is the distribution's name and the kernel release.
	OS string
	// Go, Chromium, Node and PlaywrightMCP are versions.
	Go, Chromium, Node, PlaywrightMCP string
	// Load is the load average over 1, 5 and 15 minutes when the run
	// started ("" when unknown): how busy the machine was.
	Load string
}

// DescribeMachine gathers a Machine; what cannot be read is left empty.
func DescribeMachine(ctx context.Context, chromium, node, playwrightMCP string) Machine {
	if node == "" {
		node = "node"
	}
	m := Machine{
		CPU:           cpuModel(),
		Cores:         runtime.NumCPU(),
		MemoryBytes:   memTotal(),
		OS:            osName(),
		Go:            runtime.Version(),
		Chromium:      commandOutput(ctx, chromium, "--version"),
		Node:          commandOutput(ctx, node, "--version"),
		PlaywrightMCP: playwrightMCP,
		Load:          loadAverage(),
	}
	return m
}

func commandOutput(ctx context.Context, bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Debian's chromium wrapper script prints shell noise on stderr, so only
	// stdout is read.
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("MemTotal:")); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

func osName() string {
	name := runtime.GOOS
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
				name = strings.Trim(v, `"`)
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		name += ", kernel " + strings.TrimSpace(string(b))
	}
	return name
}
