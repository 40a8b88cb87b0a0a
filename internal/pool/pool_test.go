package pool

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
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

// browserTests lets one test at a time run its browsers: each test runs at
// most two processes at once (three while one is replaced), and the machine
// has two cores.
var browserTests = make(chan struct{}, 1)

// setup starts a pool configured by cfg, with a work dir and registry of the
// test's own and no periodic health checks unless cfg asks for them.
func setup(t testing.TB, cfg Config) *testBundle {
	t.Helper()
	browserTests <- struct{}{}
	t.Cleanup(func() { <-browserTests })
	reg := prometheus.NewRegistry()
	workDir := t.TempDir()
	cfg.WorkDir, cfg.Registerer = workDir, reg
	if cfg.HealthInterval == 0 {
		cfg.HealthInterval = time.Hour
	}
	p, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	t.Cleanup(p.Close)
	return &testBundle{pool: p, workDir: workDir, reg: reg}
}

func (b *testBundle) restarts(reason string) float64 {
	return testutil.ToFloat64(b.pool.metrics.restarts.WithLabelValues(reason))
}

// procs returns the pool's live processes.
func (b *testBundle) procs() []*process {
	b.pool.mu.Lock()
	defer b.pool.mu.Unlock()
	return append([]*process(nil), b.pool.procs...)
}

// waitReady waits until n processes take leases.
func (b *testBundle) waitReady(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ready := 0
		for _, proc := range b.procs() {
			if proc.state == stateReady {
				ready++
			}
		}
		return ready == n
	}, time.Minute, 10*time.Millisecond)
}

func lease(t testing.TB, p *Pool) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := p.Lease(ctx, browser.SessionOptions{})
	require.NoError(t, err)
	t.Cleanup(l.Release)
	return l
}

func exited(t *testing.T, proc *process) {
	t.Helper()
	select {
	case <-proc.exited:
	case <-time.After(time.Minute):
		t.Fatalf("chromium pid %d still running", proc.pid())
	}
}

func ended(t *testing.T, l *Lease) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(time.Minute):
		t.Fatal("lease still live")
	}
}

// cookieSite sets a cookie on /set and echoes the request's cookies on /.
func cookieSite(t testing.TB) *httptest.Server {
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

func visit(t testing.TB, s *browser.Session, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	page, err := s.NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, page.Navigate(ctx, url, 20*time.Second))
	_, title, err := page.Location(ctx)
	require.NoError(t, err)
	return title
}

func TestLeasesAreIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 2})
	site := cookieSite(t)

	first, second := lease(t, b.pool), lease(t, b.pool)
	require.Equal(t, 2.0, testutil.ToFloat64(b.pool.metrics.inUse))
	require.Same(t, first.proc, second.proc, "two contexts share the one warm process (4 per process by default)")

	visit(t, first.Session(), site.URL+"/set")
	require.Equal(t, "cookies:session=secret", visit(t, first.Session(), site.URL+"/"))
	require.Equal(t, "cookies:", visit(t, second.Session(), site.URL+"/"), "another run's context sees no cookies")
}

func TestLeaseWaitsForCapacity(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 1})
	l, err := b.pool.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = b.pool.Lease(ctx, browser.SessionOptions{})
	require.ErrorIs(t, err, context.DeadlineExceeded, "a full pool makes callers wait until their deadline")

	l.Release()
	l.Release() // idempotent
	require.ErrorIs(t, l.Err(), ErrReleased)
	again := lease(t, b.pool)
	again.Release()
	require.Equal(t, 0.0, testutil.ToFloat64(b.pool.metrics.inUse))
	require.Equal(t, uint64(2), histogramCount(t, b.reg, "wayfinder_pool_lease_wait_seconds"))
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestCrashFailsLeasesAndReplacesTheBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 2})
	site := cookieSite(t)
	doomed := lease(t, b.pool)
	require.Nil(t, doomed.Err())
	crashed := doomed.proc

	require.NoError(t, syscall.Kill(-crashed.pid(), syscall.SIGKILL))
	ended(t, doomed)
	require.ErrorIs(t, doomed.Err(), browser.ErrBrowserGone, "the runner learns its browser died")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := doomed.Session().NewPage(ctx, browser.PageOptions{})
	require.ErrorIs(t, err, browser.ErrBrowserGone, "the dead session's calls fail as a browser crash")

	fresh := lease(t, b.pool)
	require.NotSame(t, crashed, fresh.proc, "the next lease gets a replacement")
	require.Equal(t, "cookies:", visit(t, fresh.Session(), site.URL+"/"))
	require.Equal(t, 1.0, b.restarts(reasonCrash))
	doomed.Release() // after the crash: frees its slot, nothing else
	require.Equal(t, 1.0, testutil.ToFloat64(b.pool.metrics.inUse))
}

func TestHungBrowserIsKilledAndReplaced(t *testing.T) {
	t.Parallel()
	// The ping timeout is generous so that a loaded machine cannot make the
	// healthy browser look hung before the test stops it.
	b := setup(t, Config{Capacity: 1, HealthInterval: 100 * time.Millisecond, PingTimeout: 2 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = b.pool.Run(ctx) }()
	doomed := lease(t, b.pool)
	hung := doomed.proc

	require.NoError(t, syscall.Kill(-hung.pid(), syscall.SIGSTOP))
	ended(t, doomed)
	require.ErrorIs(t, doomed.Err(), browser.ErrBrowserGone)
	exited(t, hung)
	require.Equal(t, 1.0, b.restarts(reasonHang))
	doomed.Release()

	fresh := lease(t, b.pool)
	require.NotSame(t, hung, fresh.proc)
	require.Equal(t, "cookies:", visit(t, fresh.Session(), cookieSite(t).URL+"/"))
}

func TestLeaseOnAHungBrowserMovesToAnother(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 1, CreateTimeout: 2 * time.Second, PingTimeout: 2 * time.Second})
	hung := b.procs()[0]
	require.NoError(t, syscall.Kill(-hung.pid(), syscall.SIGSTOP))

	l := lease(t, b.pool) // no health loop: the lease itself notices
	require.NotSame(t, hung, l.proc)
	exited(t, hung)
	require.Equal(t, 1.0, b.restarts(reasonHang))
	require.Equal(t, "cookies:", visit(t, l.Session(), cookieSite(t).URL+"/"))
}

func TestHealthCheckMeasuresMemory(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 1})
	b.pool.checkHealth()
	pss, rss := testutil.ToFloat64(b.pool.metrics.pss), testutil.ToFloat64(b.pool.metrics.rss)
	require.Greater(t, pss, float64(50<<20), "an idle Chromium holds tens of MB at least")
	require.Greater(t, rss, pss)
	require.Equal(t, 0.0, b.restarts(reasonHang)+b.restarts(reasonRecycleMemory), "a healthy browser under the limit stays")
}

func TestRecycleAfterRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 1, RecycleAfter: 2})
	first := lease(t, b.pool)
	old := first.proc
	first.Release()
	second := lease(t, b.pool)
	require.Same(t, old, second.proc)
	b.waitReady(t, 1) // the replacement warms up while the second run goes on
	require.Equal(t, stateDraining, stateOf(b.pool, old), "no new lease after the second run")
	require.Nil(t, second.Err(), "draining leaves open leases alone")
	second.Release()
	exited(t, old)
	third := lease(t, b.pool)
	require.NotSame(t, old, third.proc)
	require.Equal(t, 1.0, b.restarts(reasonRecycleRuns))
}

func stateOf(p *Pool, proc *process) procState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return proc.state
}

func TestRecycleAboveMemoryLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 1, MemoryLimit: 1 << 20})
	first := lease(t, b.pool)
	old := first.proc
	visit(t, first.Session(), cookieSite(t).URL+"/")
	first.Release()
	exited(t, old) // measured after the release, far above 1 MiB, idle: killed
	require.Equal(t, 1.0, b.restarts(reasonRecycleMemory))
	b.pool.mu.Lock()
	measured := old.memory
	b.pool.mu.Unlock()
	require.Greater(t, measured.PSS, int64(1<<20))
	require.Greater(t, measured.RSS, measured.PSS, "RSS counts shared pages once per process")
	next := lease(t, b.pool)
	require.NotSame(t, old, next.proc)
}

func TestProcessPerRun(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 1, ProcessPerRun: true})
	first := lease(t, b.pool)
	first.Release()
	exited(t, first.proc)
	second := lease(t, b.pool)
	require.NotSame(t, first.proc, second.proc, "every run gets a process of its own")
	require.NotEqual(t, first.proc.pid(), second.proc.pid())
}

func TestContextsArePackedPerProcess(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 4, ContextsPerProcess: 2})
	require.Len(t, b.procs(), 2, "warm processes for the whole capacity are ready at start")
	require.Equal(t, 2.0, testutil.ToFloat64(b.pool.metrics.processes))
	per := map[*process]int{}
	for range 4 {
		per[lease(t, b.pool).proc]++
	}
	require.Len(t, per, 2)
	for proc, n := range per {
		require.Equal(t, 2, n, "pid %d", proc.pid())
	}
}

func TestHungCloseBlocksNoLease(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 1, CloseTimeout: 200 * time.Millisecond})
	first := lease(t, b.pool)
	proc := first.proc

	// The browser never answers the close of first's context; everything
	// else still works. The ping that follows the missed close waits until
	// the next lease is made, so the order below is certain.
	stuck, unstick, leased := make(chan struct{}), make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(unstick) })
	var once sync.Once
	hook := callHook(func(ctx context.Context, method string, params any) error {
		switch method {
		case "Target.disposeBrowserContext":
			once.Do(func() { close(stuck) })
			<-unstick // ignores ctx: the worst a browser can do
		case "Browser.getVersion":
			select {
			case <-leased:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	b.pool.hook.Store(&hook)

	first.Release() // returns although the close hangs
	<-stuck
	second := lease(t, b.pool)
	close(leased)
	require.Same(t, proc, second.proc)
	require.Equal(t, "cookies:", visit(t, second.Session(), cookieSite(t).URL+"/"), "the browser serves the next run")

	// The close missed its deadline but the browser answers pings: it is
	// recycled once its open lease ends, and that lease is not failed.
	require.Eventually(t, func() bool { return stateOf(b.pool, proc) == stateDraining }, time.Minute, 10*time.Millisecond)
	require.Nil(t, second.Err())
	require.Equal(t, 1.0, b.restarts(reasonHang))
	b.pool.hook.Store(nil)
	second.Release()
	exited(t, proc)
	require.NotSame(t, proc, lease(t, b.pool).proc)
}

func TestDownloadsAreDenied(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 2})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<title>files</title><a href="/file/wayfinder-download.txt">report</a>`)
	})
	mux.HandleFunc("/file/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", "attachment; filename="+r.PathValue("name"))
		w.Header().Set("Content-Type", "application/octet-stream")
		fmt.Fprint(w, "secret file")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// download clicks the link in l's context and returns the final state
	// of the download it starts.
	download := func(l *Lease) proto.BrowserDownloadProgressState {
		var state proto.BrowserDownloadProgressState
		wait := l.proc.browser.Context(ctx).EachEvent(func(e *proto.BrowserDownloadProgress) bool {
			state = e.State
			return e.State != proto.BrowserDownloadProgressStateInProgress
		})
		page := rodPage(t, l, srv.URL+"/")
		click(t, page, "a")
		wait()
		return state
	}

	denied := lease(t, b.pool)
	require.Equal(t, proto.BrowserDownloadProgressStateCanceled, download(denied))
	tmp, err := os.ReadFile(filepath.Join(denied.proc.dir, tmpdirFile))
	require.NoError(t, err)
	home, _ := os.UserHomeDir()
	for _, dir := range []string{b.workDir, string(tmp), filepath.Join(home, "Downloads")} {
		require.Empty(t, findFile(dir, "wayfinder-download.txt"), "denied download found under %s", dir)
	}

	// The control: the same link in a context that allows downloads saves
	// the file.
	allowed, dir := lease(t, b.pool), t.TempDir()
	require.NoError(t, proto.BrowserSetDownloadBehavior{
		Behavior: proto.BrowserSetDownloadBehaviorBehaviorAllow, BrowserContextID: allowed.contextID,
		DownloadPath: dir, EventsEnabled: true,
	}.Call(allowed.proc.browser.Context(ctx)))
	require.Equal(t, proto.BrowserDownloadProgressStateCompleted, download(allowed))
	require.NotEmpty(t, findFile(dir, "wayfinder-download.txt"))
}

// rodPage opens url in l's context through rod, for what browser.Page does
// not offer.
func rodPage(t testing.TB, l *Lease, url string) *rod.Page {
	t.Helper()
	inc := *l.proc.browser
	inc.BrowserContextID = l.contextID
	page, err := inc.Page(proto.TargetCreateTarget{})
	require.NoError(t, err)
	page = page.Timeout(time.Minute)
	require.NoError(t, page.Navigate(url))
	require.NoError(t, page.WaitLoad())
	return page
}

func click(t *testing.T, page *rod.Page, selector string) {
	t.Helper()
	el, err := page.Element(selector)
	require.NoError(t, err)
	require.NoError(t, el.Click(proto.InputMouseButtonLeft, 1))
}

// findFile lists the paths named name under dir.
func findFile(dir, name string) []string {
	var found []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == name {
			found = append(found, path)
		}
		return nil
	})
	return found
}

func TestCrossOriginFramesShareTheirPagesRenderer(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 1})
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<title>inner</title><button>in the frame</button>`)
	}))
	t.Cleanup(inner.Close)
	// Another origin: localhost instead of 127.0.0.1.
	frameURL := strings.Replace(inner.URL, "127.0.0.1", "localhost", 1)
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<title>outer</title><iframe src="%s"></iframe>`, frameURL)
	}))
	t.Cleanup(outer.Close)

	l := lease(t, b.pool)
	page := rodPage(t, l, outer.URL+"/")
	frame, err := page.Element("iframe")
	require.NoError(t, err)
	content, err := frame.Frame()
	require.NoError(t, err)
	require.NoError(t, content.WaitLoad())
	require.True(t, content.MustHas("button"), "the frame loaded")

	targets, err := proto.TargetGetTargets{}.Call(l.proc.browser.Context(page.GetContext()))
	require.NoError(t, err)
	for _, info := range targets.TargetInfos {
		require.NotEqual(t, proto.TargetTargetInfoType("iframe"), info.Type,
			"no out-of-process frame: the cross-origin frame lives in its page's session (%s)", info.URL)
	}
}

func TestManyLeasesLeaveNoProcessNorFile(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 2, RecycleAfter: 5, MemoryLimit: -1})
	site := cookieSite(t)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for i := range 30 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				l, err := b.pool.Lease(ctx, browser.SessionOptions{})
				cancel()
				if !assertNoError(t, err) {
					return
				}
				if i%3 == 0 {
					visit(t, l.Session(), site.URL+"/")
				}
				l.Release()
			}
		})
	}
	wg.Wait()
	require.GreaterOrEqual(t, b.restarts(reasonRecycleRuns), 11.0, "60 runs recycled every 5 runs")
	require.Zero(t, b.restarts(reasonCrash)+b.restarts(reasonHang))

	b.pool.Close()
	require.Empty(t, users(b.workDir), "no Chromium process is left")
	require.Empty(t, zombieChildren(), "every child is reaped")
	entries, err := os.ReadDir(b.workDir)
	require.NoError(t, err)
	require.Empty(t, entries, "every user-data dir is removed")
	require.Empty(t, tmpdirsOf(t, b), "every TMPDIR is removed")
}

// assertNoError reports err as a test failure from any goroutine.
func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

// tmpdirsOf lists the browser TMPDIRs that still exist among those the
// pool created (remembered by name prefix and owner dir in the system temp).
func tmpdirsOf(t *testing.T, b *testBundle) []string {
	t.Helper()
	var left []string
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "wfc-*"))
	for _, d := range dirs {
		// A TMPDIR holds Chromium's singleton socket link to the
		// user-data dir of its own process.
		if target, err := os.Readlink(filepath.Join(d, "SingletonSocket")); err == nil && strings.Contains(target, b.workDir) {
			left = append(left, d)
		}
	}
	return left
}

// TestKilledServerLeavesNoBrowser kills a process running a pool (this test
// binary, re-executed) with SIGKILL: its browsers die with it, and the next
// start removes what it left on disk.
func TestKilledServerLeavesNoBrowser(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("WAYFINDER_POOL_TEST_SERVER"); dir != "" {
		p, err := New(Config{Capacity: 2, ContextsPerProcess: 1, WorkDir: dir, HealthInterval: time.Hour})
		require.NoError(t, err)
		require.NoError(t, p.Start(context.Background()))
		_, err = p.Lease(context.Background(), browser.SessionOptions{})
		require.NoError(t, err)
		fmt.Println("serving")
		time.Sleep(time.Hour) // until killed
	}
	browserTests <- struct{}{}
	t.Cleanup(func() { <-browserTests })
	dir := t.TempDir()
	server := exec.Command(os.Args[0], "-test.run=^TestKilledServerLeavesNoBrowser$")
	server.Env = append(os.Environ(), "WAYFINDER_POOL_TEST_SERVER="+dir)
	out, err := server.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, server.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "serving")
	require.NotEmpty(t, users(dir))

	require.NoError(t, server.Process.Kill())
	_ = server.Wait()
	require.Eventually(t, func() bool { return len(users(dir)) == 0 }, time.Minute, 20*time.Millisecond,
		"every Chromium process dies with the server")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, left, 2, "the killed server's user-data dirs")

	p, err := New(Config{Capacity: 1, WorkDir: dir, HealthInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	p.Close()
	left, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "the next start swept them")
}

func TestCloseAndSweepLeaveNoProcess(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Capacity: 1})
	l := lease(t, b.pool)
	require.NotEmpty(t, users(b.workDir))
	b.pool.Close()
	ended(t, l)
	require.ErrorIs(t, l.Err(), browser.ErrBrowserGone, "Close fails open leases")
	require.ErrorIs(t, l.Err(), ErrClosed)
	// Renderers killed with their group may take a moment to leave /proc.
	require.Eventually(t, func() bool { return len(users(b.workDir)) == 0 }, time.Minute, 20*time.Millisecond,
		"Close kills the browser")
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
	exited(t, stale)
	entries, err = os.ReadDir(b.workDir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// users lists live processes whose command line mentions dir.
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

// zombieChildren lists this process's children that exited unreaped.
func zombieChildren() []string {
	var zombies []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		end := strings.LastIndexByte(string(raw), ')')
		fields := strings.Fields(string(raw[end+1:]))
		if len(fields) > 1 && fields[0] == "Z" && fields[1] == fmt.Sprint(os.Getpid()) {
			zombies = append(zombies, string(raw))
		}
	}
	return zombies
}

func TestChromiumFlags(t *testing.T) {
	t.Parallel()
	flags := chromiumFlags("/data/profile")
	var features []string
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--disable-features="); ok {
			features = append(features, v)
		}
	}
	require.Len(t, features, 1, "Chromium reads only one --disable-features")
	for _, want := range []string{"IsolateOrigins", "site-per-process", "Translate"} {
		require.Contains(t, strings.Split(features[0], ","), want)
	}
	for _, want := range []string{"--disable-site-isolation-trials", "--user-data-dir=/data/profile", "--disable-quic",
		"--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-crash-reporter"} {
		require.Contains(t, flags, want)
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line string
		pgrp       int
		rss        int64
		ok         bool
	}{
		{"plain", "42 (chromium) S 1 40 40 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 100 1000 250 18446744073709551615", 40, 250, true},
		{"spaces and parens in the name", "7 (a) b (c) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 2 3 4", 9, 3, true},
		{"truncated", "7 (x) S 1 9", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pgrp, rss, ok := parseStat([]byte(tc.line))
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.pgrp, pgrp)
			require.Equal(t, tc.rss, rss)
		})
	}
}
