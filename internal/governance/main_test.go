package governance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/pool/pooltest"
)

// shared is the Chromium pool the tests share, started by the first test
// that needs it and closed by TestMain.
var shared = pooltest.New("governance", 6)

// TestMain closes the shared pool and fails the package when a test leaves
// a goroutine behind.
func TestMain(m *testing.M) { pooltest.Main(m, shared, false) }

// sharedPool returns the shared pool.
func sharedPool(t *testing.T) *pool.Pool { return shared.Pool(t) }

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
