package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
)

// fixtures serves testdata/ on two origins (two ports of 127.0.0.1, so
// cross-origin to each other), each page's "{{OTHER_ORIGIN}}" replaced by
// the other server's URL: frames.html embeds a cross-origin iframe that way.
type fixtures struct {
	base, other string
}

func serveFixtures(t testing.TB) fixtures {
	t.Helper()
	var f fixtures
	handler := func(self, peer *string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := filepath.Base(r.URL.Path)
			b, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil || !strings.HasSuffix(name, ".html") {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(strings.ReplaceAll(string(b), "{{OTHER_ORIGIN}}", *peer)))
		})
	}
	a := httptest.NewServer(handler(&f.base, &f.other))
	b := httptest.NewServer(handler(&f.other, &f.base))
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	f.base, f.other = a.URL, b.URL
	return f
}

// fixturePage opens testdata/name in a fresh browser session.
func fixturePage(t *testing.T, name string) (*browser.Page, fixtures) {
	t.Helper()
	f := serveFixtures(t)
	return newPage(t, f.base+"/"+name), f
}

// snapshot takes a snapshot and fails the test on error.
func snapshot(t testing.TB, page *browser.Page, opts browser.SnapshotOptions) *browser.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := page.Snapshot(ctx, opts)
	require.NoError(t, err)
	return s
}

// benchNavTimeout bounds fixture page loads outside newPage.
const benchNavTimeout = 20 * time.Second

// benchSession leases a browser context for a benchmark (newSession takes
// a *testing.T).
func benchSession(b *testing.B) *browser.Session {
	b.Helper()
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: b.TempDir(), HealthInterval: time.Hour})
	require.NoError(b, err)
	require.NoError(b, p.Start(context.Background()))
	b.Cleanup(p.Close)
	lease, err := p.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(b, err)
	b.Cleanup(lease.Release)
	return lease.Session()
}
