package browser_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// BenchmarkSnapshot measures a snapshot of each fixture page, reporting
// the size of its text rendering (chars/op), of its JSON (json-bytes/op)
// and the elements listed beside the time. Rendering and marshalling are
// inside the timed loop: they are part of every step.
func BenchmarkSnapshot(b *testing.B) {
	f := serveFixtures(b)
	session := benchSession(b)
	for _, name := range []string{"form.html", "table.html", "big.html", "shadow.html", "frames.html", "messy.html"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			page, err := session.NewPage(ctx, browser.PageOptions{})
			require.NoError(b, err)
			require.NoError(b, page.Navigate(ctx, f.base+"/"+name, benchNavTimeout))
			var chars, jsonBytes, elements int
			for b.Loop() {
				s, err := page.Snapshot(ctx, browser.SnapshotOptions{})
				require.NoError(b, err)
				chars = len(s.Text())
				js, err := json.Marshal(s)
				require.NoError(b, err)
				jsonBytes, elements = len(js), len(s.Elements)
			}
			b.ReportMetric(float64(chars), "chars/op")
			b.ReportMetric(float64(jsonBytes), "json-bytes/op")
			b.ReportMetric(float64(elements), "elements/op")
		})
	}
}

// BenchmarkCapture measures screenshots of the table page: PNG and JPEG of
// the viewport, and the set-of-marks overlay, reporting bytes/op.
func BenchmarkCapture(b *testing.B) {
	f := serveFixtures(b)
	ctx := context.Background()
	page, err := benchSession(b).NewPage(ctx, browser.PageOptions{})
	require.NoError(b, err)
	require.NoError(b, page.Navigate(ctx, f.base+"/table.html", benchNavTimeout))
	s, err := page.Snapshot(ctx, browser.SnapshotOptions{})
	require.NoError(b, err)
	for _, c := range []struct {
		name string
		opts browser.ScreenshotOptions
	}{
		{"png", browser.ScreenshotOptions{}},
		{"jpeg", browser.ScreenshotOptions{Format: browser.FormatJPEG}},
		{"jpeg-marks", browser.ScreenshotOptions{Format: browser.FormatJPEG, Marks: s}},
		{"png-marks", browser.ScreenshotOptions{Marks: s}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var size int
			for b.Loop() {
				img, err := page.Capture(ctx, c.opts)
				require.NoError(b, err)
				size = len(img.Data)
			}
			b.ReportMetric(float64(size), "bytes/op")
		})
	}
}
