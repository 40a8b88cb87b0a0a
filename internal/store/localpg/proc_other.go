//go:build unix && !linux

package localpg

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// maxSocketPath is the longest usable Unix socket path on the BSDs and macOS
// (sun_path is 104 bytes including the terminating NUL).
const maxSocketPath = 103

// sysProcAttr returns the attributes for initdb and postgres: their own
// process group. There is no parent-death signal outside Linux, so a server
// left behind by a killed parent is stopped by the next Start instead.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

// processGone reports whether pid no longer names a running process. A zombie
// counts as gone.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}

// isClusterPostmaster reports whether pid is a postgres process. Without
// /proc the working directory cannot be checked portably.
func isClusterPostmaster(pid int, _ string) bool {
	out, err := exec.Command("ps", "-o", "comm=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.Contains(string(out), "postgres")
}
