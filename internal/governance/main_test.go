package governance

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
)

// shared is the Chromium pool the browser tests share, started by the first
// test that needs it and closed by TestMain.
var shared struct {
	once sync.Once
	pool *pool.Pool
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.pool != nil {
		shared.pool.Close()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func sharedPool(t *testing.T) *pool.Pool {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "governance-test-")
		if shared.err != nil {
			return
		}
		shared.pool, shared.err = pool.New(pool.Config{Capacity: 6, ContextsPerProcess: 6,
			WorkDir: shared.dir, HealthInterval: time.Hour, MemoryLimit: -1})
		if shared.err != nil {
			return
		}
		shared.err = shared.pool.Start(context.Background())
	})
	require.NoError(t, shared.err)
	return shared.pool
}

// newPage leases a context for t and opens a blank page in it.
func newPage(t *testing.T) *browser.Page {
	t.Helper()
	lease, err := sharedPool(t).Lease(context.Background(), browser.SessionOptions{})
	require.NoError(t, err)
	t.Cleanup(lease.Release)
	page, err := lease.Session().NewPage(context.Background(), browser.PageOptions{})
	require.NoError(t, err)
	return page
}

// openPage opens url in a new page.
func openPage(t *testing.T, url string) *browser.Page {
	t.Helper()
	page := newPage(t)
	require.NoError(t, page.Navigate(context.Background(), url, 20*time.Second))
	return page
}

// serve serves pages (path → HTML; "/robots.txt" as text) on 127.0.0.1
// until t ends and returns the base URL.
func serve(t *testing.T, pages map[string]string) string {
	t.Helper()
	mux := http.NewServeMux()
	for path, body := range pages {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			ct := "text/html; charset=utf-8"
			if path == "/robots.txt" {
				ct = "text/plain"
			}
			w.Header().Set("Content-Type", ct)
			_, _ = w.Write([]byte(body))
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// cookie returns the value of the page's cookie name, "" when unset.
func cookie(t *testing.T, page *browser.Page, name string) string {
	t.Helper()
	res, err := page.Do(context.Background(), browser.Action{Kind: browser.ActionGetCookies})
	require.NoError(t, err)
	for _, c := range res.Cookies {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// reports collects a run's reports.
type reports struct {
	mu  sync.Mutex
	all []Report
}

func (r *reports) add(_ context.Context, rep Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, rep)
}

func (r *reports) kinds() []ReportKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ReportKind
	for _, rep := range r.all {
		out = append(out, rep.Kind)
	}
	return out
}
