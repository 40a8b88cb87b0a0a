package pool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/go-rod/rod"
)

// userDataPrefix names the per-process directories, so a start can sweep the
// ones a killed server left behind.
const userDataPrefix = "wayfinder-chromium-"

var devtoolsLine = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// process is one Chromium process in its own process group with its own
// user-data dir and TMPDIR, and the pool's bookkeeping of it.
type process struct {
	cmd     *exec.Cmd
	dir     string
	wsURL   string
	exited  chan struct{}
	exitErr error

	// Set by Pool.startProcess once connected.
	client  *cdpClient
	browser *rod.Browser
	// stopBrowser ends rod's event loop for this browser.
	stopBrowser context.CancelFunc

	// Guarded by Pool.mu.
	state  procState
	active int // leases open on it
	runs   int // leases it ever served
	leases map[*Lease]struct{}
	memory groupMemory // last measured
}

// procState is where a process is in its life.
type procState int

const (
	// stateReady: takes new leases.
	stateReady procState = iota
	// stateDraining: serves its open leases, takes no new ones, and is
	// killed when the last one is released.
	stateDraining
	// stateDead: killed or crashed; its leases have failed.
	stateDead
)

func (p *process) pid() int { return p.cmd.Process.Pid }

// launch starts Chromium and waits until it prints its DevTools endpoint.
func launch(ctx context.Context, bin, workDir string) (*process, error) {
	dir, err := os.MkdirTemp(workDir, userDataPrefix)
	if err != nil {
		return nil, fmt.Errorf("create user-data dir: %w", err)
	}
	// Chromium puts its singleton socket in TMPDIR, and a socket path must
	// fit in 108 bytes, so TMPDIR is short and outside the work dir; the
	// work dir remembers it for sweepStale.
	tmp, err := os.MkdirTemp("", "wfc-")
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create browser TMPDIR: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, tmpdirFile), []byte(tmp), 0o600); err != nil {
		os.RemoveAll(dir)
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("record browser TMPDIR: %w", err)
	}
	cmd := exec.Command(bin, chromiumFlags(filepath.Join(dir, "profile"))...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	// Its own process group, so that closing kills renderers and helpers
	// too; and killed with the server should the server die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("chromium stderr: %w", err)
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start chromium %s: %w", bin, err)
	}
	p := &process{cmd: cmd, dir: dir, exited: make(chan struct{})}
	found := make(chan string, 1)
	readDone := make(chan struct{})
	var tail strings.Builder // written by the reader until readDone
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if m := devtoolsLine.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			} else if tail.Len() < 4096 {
				tail.WriteString(line + "\n")
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.wsURL = <-found:
		return p, nil
	case <-p.exited:
		<-readDone
		// The process that exited may leave its children (zygote,
		// helpers, or the browser itself when the launcher script was
		// killed) writing into the user-data dir; end the group first,
		// or the dir is removed under them and partly re-created.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.cleanup()
		return nil, fmt.Errorf("chromium exited during start (%v): %s", p.exitErr, strings.TrimSpace(tail.String()))
	case <-ctx.Done():
		p.kill()
		return nil, fmt.Errorf("chromium did not start: %w", ctx.Err())
	}
}

// kill ends the whole process group (SIGKILL ends a stopped process too),
// reaps it and removes the user-data dir and TMPDIR.
func (p *process) kill() {
	if p.stopBrowser != nil {
		p.stopBrowser()
	}
	if p.client != nil {
		p.client.close()
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
	p.cleanup()
}

func (p *process) cleanup() { removeProcessDir(p.dir) }

// tmpdirFile, inside a process dir, holds the path of its TMPDIR.
const tmpdirFile = "tmpdir"

// removeProcessDir removes a process dir and the TMPDIR it names.
func removeProcessDir(dir string) {
	if tmp, err := os.ReadFile(filepath.Join(dir, tmpdirFile)); err == nil &&
		strings.HasPrefix(filepath.Base(string(tmp)), "wfc-") {
		_ = os.RemoveAll(string(tmp))
	}
	_ = os.RemoveAll(dir)
}

// sweepStale removes user-data dirs under workDir left by a process that
// died without cleaning up (the server was killed), and kills any Chromium
// still using them.
func sweepStale(workDir string) error {
	entries, err := os.ReadDir(workDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("sweep browser dirs: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), userDataPrefix) {
			continue
		}
		dir := filepath.Join(workDir, e.Name())
		killUsers(dir)
		removeProcessDir(dir)
	}
	return nil
}

// killUsers kills the process groups of processes whose command line names
// dir (orphaned Chromium processes of a killed server).
func killUsers(dir string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), dir) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(f)), "%d", &pid); err == nil && pid != os.Getpid() {
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// FindChromium returns the Chromium binary to use: path when set, else the
// first of chromium, chromium-browser, google-chrome-stable, google-chrome on
// PATH. Wayfinder never downloads a browser.
func FindChromium(path string) (string, error) {
	if path != "" {
		if _, err := exec.LookPath(path); err != nil {
			return "", fmt.Errorf("chromium %q: %w", path, err)
		}
		return path, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium found on PATH: install it (Debian/Ubuntu: apt-get install chromium) or set WAYFINDER_CHROMIUM to its path")
}
