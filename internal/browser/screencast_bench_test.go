package browser_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/pool/pooltest"
)

// BenchmarkInputToFrame measures what a person driving a run feels: a
// click dispatched on the page (the button repaints a counter) until the
// screencast delivers the frame that shows it. input-to-frame-ms is the
// median; KB/frame the median JPEG size of a 1280x800 viewport at the
// live view's quality (60).
func BenchmarkInputToFrame(b *testing.B) {
	base := pooltest.ServeHTML(b, map[string]string{"/": `<!doctype html><title>Counter</title>
<style>body{margin:0;font:16px sans-serif} #b{position:absolute;left:20px;top:20px;width:200px;height:50px}</style>
<button id="b" onclick="this.textContent = 'clicked ' + (++window.n)">Click me</button>
<p style="position:absolute;top:100px">Some text that stays, so that frames are not empty pictures.</p>
<script>window.n = 0</script>`})
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: b.TempDir(), HealthInterval: time.Hour})
	require.NoError(b, err)
	require.NoError(b, p.Start(context.Background()))
	b.Cleanup(p.Close)
	lease, err := p.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(b, err)
	b.Cleanup(lease.Release)
	ctx := context.Background()
	pg, err := lease.Session().NewPage(ctx, browser.PageOptions{Width: 1280, Height: 800})
	require.NoError(b, err)
	require.NoError(b, pg.Navigate(ctx, base+"/", 20*time.Second))

	frames := make(chan browser.ScreencastFrame, 16)
	stop, err := pg.StartScreencast(ctx, browser.ScreencastOptions{Quality: 60}, func(f browser.ScreencastFrame) {
		select {
		case frames <- f:
		default:
		}
	})
	require.NoError(b, err)
	b.Cleanup(stop)
	<-frames // the still
	drain := func() {
		for {
			select {
			case <-frames:
			case <-time.After(50 * time.Millisecond):
				return
			}
		}
	}
	var lat []time.Duration
	var sizes []int
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		drain()
		b.StartTimer()
		start := time.Now()
		for _, typ := range []browser.MouseEventType{browser.MouseDown, browser.MouseUp} {
			require.NoError(b, pg.DispatchMouse(ctx, browser.MouseEvent{Type: typ, X: 100, Y: 40, Button: browser.ButtonLeft, ClickCount: 1}))
		}
		select {
		case f := <-frames:
			lat = append(lat, time.Since(start))
			sizes = append(sizes, len(f.JPEG))
		case <-time.After(10 * time.Second):
			b.Fatal("no frame after a click that repaints")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(sizes)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "input-to-frame-ms")
	b.ReportMetric(float64(sizes[len(sizes)/2])/1024, "KB/frame")
}
