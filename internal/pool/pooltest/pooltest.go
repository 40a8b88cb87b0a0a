// Package pooltest gives a test binary one Chromium pool that its tests
// share (several contexts in one process, as in production), started by the
// first test that needs it and closed by Main.
package pooltest

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wayfinder/wayfinder/internal/pool"
)

// Shared is a lazily started pool of one test binary.
type Shared struct {
	name     string
	capacity int

	once sync.Once
	pool *pool.Pool
	dir  string
	err  error
}

// New returns a shared pool of capacity contexts in one Chromium process;
// name prefixes its work directory.
func New(name string, capacity int) *Shared {
	return &Shared{name: name, capacity: capacity}
}

// Pool returns the pool, starting it on first use; t fails when it cannot
// start.
func (s *Shared) Pool(t testing.TB) *pool.Pool {
	t.Helper()
	s.once.Do(func() {
		s.dir, s.err = os.MkdirTemp("", s.name+"-test-")
		if s.err != nil {
			return
		}
		s.pool, s.err = pool.New(pool.Config{Capacity: s.capacity, ContextsPerProcess: s.capacity,
			WorkDir: s.dir, HealthInterval: time.Hour, MemoryLimit: -1})
		if s.err != nil {
			return
		}
		s.err = s.pool.Start(context.Background())
	})
	if s.err != nil {
		t.Fatalf("shared browser pool: %v", s.err)
	}
	return s.pool
}

// close stops the pool (if it was started) and removes its directory.
func (s *Shared) close() {
	if s.pool != nil {
		s.pool.Close()
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// Main runs the tests, closes s, fails the binary when a test left a
// goroutine behind, and exits. With moreParallel, tests run more at once
// than there are cores (they mostly wait on Chromium) unless -parallel
// says otherwise.
func Main(m *testing.M, s *Shared, moreParallel bool) {
	if moreParallel {
		flag.Parse()
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
		if !set {
			_ = flag.Set("test.parallel", strconv.Itoa(max(4, runtime.GOMAXPROCS(0))))
		}
	}
	code := m.Run()
	s.close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// ServeHTML serves the given pages (path → HTML) on 127.0.0.1 until t ends
// and returns the base URL.
func ServeHTML(t testing.TB, pages map[string]string) string {
	t.Helper()
	mux := http.NewServeMux()
	for path, html := range pages {
		mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(html))
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
