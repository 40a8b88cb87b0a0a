//go:build smoke

package check

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// smokeUID is the unprivileged user the smoke runs the server as: the
// image's is 10001, which this host has no passwd entry for (the managed
// Postgres standing in for DATABASE_URL needs one), so nobody.
const smokeUID = 65534

// buildAsImage builds the server with the Dockerfile's exact go build
// command and environment (ARGs set to args), into dir.
func buildAsImage(t *testing.T, df *Dockerfile, args map[string]string, dir string) string {
	t.Helper()
	b, err := df.FindGoBuild(args)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "wayfinder")
	argv := append([]string{"build"}, b.Args...)
	for i, a := range argv {
		if a == "-o" {
			argv[i+1] = out
		}
	}
	cmd := exec.Command("go", argv...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), b.Env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(argv, " "), err, msg)
	}
	return out
}

// imageEnv is the runtime stage's ENV.
func imageEnv(df *Dockerfile) map[string]string {
	env := map[string]string{}
	for _, c := range df.Stages[len(df.Stages)-1].Commands {
		if e, ok := c.(*instructions.EnvCommand); ok {
			for _, kv := range e.Env {
				env[kv.Key] = kv.Value
			}
		}
	}
	return env
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestImageLikeSmoke builds the binary as the Dockerfile does and runs it
// as the image would, short of the image itself (no Docker daemon here):
// `wayfinder version` reports the stamped build; then, as root only, the
// server runs unprivileged (uid 65534) under tini as PID 1 of a new PID
// namespace with the image's ENV (listen addresses moved to loopback ports,
// the managed Postgres standing in for DATABASE_URL), `wayfinder health`
// passes, Chromium starts unprivileged (/readyz), and SIGTERM to tini
// drains and stops it with exit status 0.
func TestImageLikeSmoke(t *testing.T) {
	df, err := ParseDockerfile([]byte(readDockerfile(t)))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "wayfinder-smoke-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stamp := map[string]string{"VERSION": "v0.0.0-smoke", "COMMIT": "0123abc", "DATE": "2026-01-02T03:04:05Z"}
	bin := buildAsImage(t, df, stamp, dir)

	out, err := exec.Command(bin, "version").CombinedOutput()
	want := fmt.Sprintf("wayfinder v0.0.0-smoke (commit 0123abc, built 2026-01-02T03:04:05Z, %s)\n", runtime.Version())
	if err != nil || string(out) != want {
		t.Fatalf("wayfinder version = %q, %v; want %q", out, err, want)
	}

	if os.Geteuid() != 0 {
		t.Skip("running as the image's user under a new PID namespace needs root")
	}
	tini, err := exec.LookPath("tini")
	if err != nil {
		t.Fatal("tini is not installed (apt-get install tini; make deploy-check installs it)")
	}
	if _, err := exec.LookPath(imageEnv(df)["WAYFINDER_CHROMIUM"]); err != nil {
		t.Fatalf("the image's Chromium: %v", err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, smokeUID, smokeUID); err != nil {
		t.Fatal(err)
	}
	env := imageEnv(df)
	httpAddr := freePort(t)
	env["WAYFINDER_DATA_DIR"], env["HOME"] = data, data
	env["WAYFINDER_HTTP_ADDR"], env["WAYFINDER_GRPC_ADDR"] = httpAddr, freePort(t)
	env["WAYFINDER_SHUTDOWN_TIMEOUT"] = "5s"
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--",
		tini, "--", "setpriv", "--reuid", strconv.Itoa(smokeUID), "--regid", strconv.Itoa(smokeUID), "--clear-groups", "--",
		bin, "serve")
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = t.Output(), t.Output()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()

	health := func(path string) error {
		c := exec.Command(bin, "health", "--url", "http://"+httpAddr+path)
		c.Env = cmd.Env
		_, err := c.CombinedOutput()
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for health("/healthz") != nil || health("/readyz") != nil {
		select {
		case <-exited:
			t.Fatalf("the server exited before it was ready: %v", waitErr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the server was not healthy and ready within 90s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The server runs as the image's user, a child of tini, which holds
	// PID 1 of the namespace.
	pid, ppid := serverProcess(t, bin)
	if uid := procUID(t, pid); uid != smokeUID {
		t.Errorf("the server runs as uid %d, want %d", uid, smokeUID)
	}
	if nspid := procField(t, ppid, "NSpid:"); !strings.HasSuffix(nspid, "\t1") {
		t.Errorf("the server's parent is not PID 1 of its namespace (NSpid %q)", nspid)
	}
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid)); strings.TrimSpace(string(comm)) != "tini" {
		t.Errorf("the server's parent is %q, want tini", comm)
	}

	// SIGTERM to the container's PID 1, as a runtime stops it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := syscall.Kill(tiniPID(t, cmd.Process.Pid), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("after SIGTERM: %v (want exit status 0)", waitErr)
		}
	case <-ctx.Done():
		t.Fatal("the server did not stop within 60s of SIGTERM")
	}
	if _, err := http.Get("http://" + httpAddr + "/healthz"); err == nil {
		t.Error("the server still answers after it stopped")
	}
}

// serverProcess finds the running bin: its PID and its parent's.
func serverProcess(t *testing.T, bin string) (pid, ppid int) {
	t.Helper()
	entries, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, e := range entries {
		if target, err := os.Readlink(e); err == nil && target == bin {
			pid, _ = strconv.Atoi(filepath.Base(filepath.Dir(e)))
			ppid, _ = strconv.Atoi(strings.TrimSpace(procField(t, pid, "PPid:")))
			return pid, ppid
		}
	}
	t.Fatal("the server process was not found")
	return 0, 0
}

// tiniPID is the child of unshare (pid): tini.
func tiniPID(t *testing.T, unsharePID int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", unsharePID, unsharePID))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 1 {
		t.Fatalf("unshare's children: %q", b)
	}
	pid, _ := strconv.Atoi(f[0])
	return pid
}

func procField(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name); ok {
			return strings.TrimLeft(v, "\t ")
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, name)
	return ""
}

func procUID(t *testing.T, pid int) int {
	t.Helper()
	f := strings.Fields(procField(t, pid, "Uid:"))
	uid, _ := strconv.Atoi(f[1]) // effective
	return uid
}
