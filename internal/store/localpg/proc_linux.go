//go:build linux

package localpg

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSocketPath is the longest usable Unix socket path (sun_path is 108 bytes
// including the terminating NUL).
const maxSocketPath = 107

// sysProcAttr returns the attributes for initdb and postgres: their own
// process group (so a terminal's Ctrl-C reaches only us, and the whole group
// can be killed) and SIGINT, a fast shutdown, when our thread dies.
//
// Go applies Pdeathsig after switching credentials, which matters: the kernel
// clears the parent-death signal whenever a process's uid or gid changes.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT, Credential: cred}
}

// processGone reports whether pid no longer names a running process. A zombie
// (exited, not yet reaped) counts as gone.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the parenthesized command name, which may itself
	// contain parentheses and spaces.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		switch stat[i+2] {
		case 'Z', 'X', 'x':
			return true
		}
	}
	return false
}

// isClusterPostmaster reports whether pid is a postgres process serving the
// cluster in pgdata: its name or command line mentions postgres and, when we
// are allowed to see it, its working directory (postgres chdirs into its data
// directory) is pgdata. This keeps a recycled pid from being signalled.
func isClusterPostmaster(pid int, pgdata string) bool {
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !strings.Contains(string(comm), "postgres") && !bytes.Contains(cmdline, []byte("postgres")) {
		return false
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return true // not ours to inspect (other user and not root): trust the name
	}
	want, err := filepath.EvalSymlinks(pgdata)
	if err != nil {
		want = pgdata
	}
	return cwd == want
}
