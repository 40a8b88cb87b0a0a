package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
)

// BenchmarkClickSettle measures action-to-settled latency: a click by ref
// until the page is settled (the snapshot every result carries is taken
// after that and not counted), on a page where the click does nothing and
// on one where it fires an XHR the server answers after 200 ms.
// settled-ms is the median; ns/op includes the snapshot.
func BenchmarkClickSettle(b *testing.B) {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("testdata/actions")))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(200 * time.Millisecond)
		_, _ = w.Write([]byte("done"))
	})
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: b.TempDir(), HealthInterval: time.Hour})
	require.NoError(b, err)
	require.NoError(b, p.Start(context.Background()))
	b.Cleanup(p.Close)
	lease, err := p.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(b, err)
	b.Cleanup(lease.Release)

	for _, bc := range []struct{ name, button string }{{"static", "Do nothing"}, {"xhr", "Load data"}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			pg, err := lease.Session().NewPage(ctx, browser.PageOptions{})
			require.NoError(b, err)
			require.NoError(b, pg.Navigate(ctx, srv.URL+"/settle.html", 20*time.Second))
			s, err := pg.Snapshot(ctx, browser.SnapshotOptions{})
			require.NoError(b, err)
			var settled, settle []time.Duration
			b.ResetTimer()
			for b.Loop() {
				var r string
				for _, e := range s.Elements {
					if e.Role == "button" && e.Name == bc.button {
						r = e.Ref
					}
				}
				res, err := pg.Do(ctx, browser.Action{Kind: browser.ActionClick, Ref: r})
				if err != nil || !res.Success {
					b.Fatalf("click: %v %+v", err, res.Error)
				}
				settled = append(settled, res.Duration)
				settle = append(settle, res.Settle.Duration)
				s = res.Snapshot
			}
			b.ReportMetric(median(settled), "settled-ms")
			b.ReportMetric(median(settle), "settle-ms")
		})
	}
}

// median returns the median of ds in milliseconds.
func median(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}
