package pool

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

type testBundle struct {
	pool    *Pool
	workDir string
	reg     *prometheus.Registry
}

func setup(t *testing.T, capacity int) *testBundle {
	t.Helper()
	reg := prometheus.NewRegistry()
	workDir := t.TempDir()
	p, err := New(Config{Capacity: capacity, WorkDir: workDir, Registerer: reg, HealthInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	t.Cleanup(p.Close)
	return &testBundle{pool: p, workDir: workDir, reg: reg}
}

// cookieSite sets a cookie on /set and echoes the request's cookies on /.
func cookieSite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "secret"})
		fmt.Fprint(w, "<title>set</title>")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<title>cookies:%s</title>", r.Header.Get("Cookie"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func visit(t *testing.T, s *browser.Session, url string) string {
	t.Helper()
	ctx := context.Background()
	page, err := s.NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, page.Navigate(ctx, url, 20*time.Second))
	_, title, err := page.Location(ctx)
	require.NoError(t, err)
	return title
}

func TestLeasesAreIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t, 2)
	site := cookieSite(t)
	ctx := context.Background()

	first, err := b.pool.Lease(ctx, browser.SessionOptions{})
	require.NoError(t, err)
	defer first.Release()
	second, err := b.pool.Lease(ctx, browser.SessionOptions{})
	require.NoError(t, err)
	defer second.Release()
	require.Equal(t, 2.0, testutil.ToFloat64(b.pool.metrics.inUse))

	visit(t, first.Session(), site.URL+"/set")
	require.Equal(t, "cookies:session=secret", visit(t, first.Session(), site.URL+"/"))
	require.Equal(t, "cookies:", visit(t, second.Session(), site.URL+"/"), "another run's context sees no cookies")
}

func TestLeaseWaitsForCapacity(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	lease, err := b.pool.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = b.pool.Lease(ctx, browser.SessionOptions{})
	require.ErrorIs(t, err, context.DeadlineExceeded, "a full pool makes callers wait until their deadline")

	lease.Release()
	lease.Release() // idempotent
	again, err := b.pool.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(t, err, "a released slot is free again")
	again.Release()
	require.Equal(t, 0.0, testutil.ToFloat64(b.pool.metrics.inUse))
}

func TestCrashedBrowserIsReplaced(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	site := cookieSite(t)
	b.pool.mu.Lock()
	pid := b.pool.proc.cmd.Process.Pid
	b.pool.mu.Unlock()

	require.NoError(t, syscall.Kill(-pid, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !b.pool.Ready() }, time.Minute, 20*time.Millisecond)

	lease, err := b.pool.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(t, err, "the next lease gets a new browser")
	defer lease.Release()
	require.Equal(t, "cookies:", visit(t, lease.Session(), site.URL+"/"))
	require.Equal(t, 1.0, testutil.ToFloat64(b.pool.metrics.restarts))
}

func TestCloseAndSweepLeaveNoProcess(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	require.NotEmpty(t, users(b.workDir))
	b.pool.Close()
	require.Empty(t, users(b.workDir), "Close kills the browser")
	entries, err := os.ReadDir(b.workDir)
	require.NoError(t, err)
	require.Empty(t, entries, "Close removes the user-data dir")
	_, err = b.pool.Lease(context.Background(), browser.SessionOptions{})
	require.ErrorIs(t, err, ErrClosed)

	// A server killed without Close leaves a browser and its dir behind;
	// the next start sweeps both.
	stale, err := launch(context.Background(), b.pool.cfg.Chromium, b.workDir)
	require.NoError(t, err)
	require.NotEmpty(t, users(b.workDir))
	require.NoError(t, sweepStale(b.workDir))
	require.Eventually(t, func() bool { return !stale.alive() }, time.Minute, 20*time.Millisecond)
	entries, err = os.ReadDir(b.workDir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// users lists processes whose command line mentions dir.
func users(dir string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		raw, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(raw), dir) {
			if stat, err := os.ReadFile(filepath.Join(filepath.Dir(f), "stat")); err == nil && !strings.Contains(string(stat), ") Z ") {
				pids = append(pids, filepath.Base(filepath.Dir(f)))
			}
		}
	}
	return pids
}
