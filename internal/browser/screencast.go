package browser

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// ScreencastOptions configure a page's screencast.
type ScreencastOptions struct {
	// Quality of the JPEG frames, 1 to 100. Default 60.
	Quality int
	// MaxWidth and MaxHeight bound the frames' size in pixels; a larger
	// viewport is scaled down. Default 1280x800.
	MaxWidth, MaxHeight int
}

// ScreencastFrame is one picture of a page's viewport.
type ScreencastFrame struct {
	// JPEG is the picture; the callback owns it.
	JPEG []byte
	// Width and Height are the viewport's size in CSS pixels, the space of
	// DispatchMouse coordinates, whatever the picture's size.
	Width, Height int
	// Time is when the browser painted the frame.
	Time time.Time
}

// screencastCall bounds the screencast's own CDP calls (acks, stop).
const screencastCall = 2 * time.Second

// StartScreencast streams the page's viewport to fn as JPEG frames until
// stop is called, ctx ends or the page closes. The first frame is a
// screenshot of the viewport as it is; the others come when the page
// paints, and only while its tab is in front. fn runs on the
// screencast's goroutine, one frame at a time: each frame is acknowledged
// (and the next one let come) when fn returns, so fn must not block for
// long; it must not call stop. stop ends the screencast and waits for fn's
// last call to return; it is idempotent. A page that closes or a browser
// that goes away ends the screencast quietly.
func (pg *Page) StartScreencast(ctx context.Context, opts ScreencastOptions, fn func(ScreencastFrame)) (stop func(), err error) {
	if opts.Quality <= 0 || opts.Quality > 100 {
		opts.Quality = 60
	}
	if opts.MaxWidth <= 0 || opts.MaxHeight <= 0 {
		opts.MaxWidth, opts.MaxHeight = 1280, 800
	}
	sctx, cancel := context.WithCancel(ctx)
	// Subscribed before the start, so the first frame is not missed; the
	// subscription ends with sctx or with the page's CDP session.
	events := pg.p.Context(sctx).Event()
	err = proto.PageStartScreencast{
		Format: proto.PageStartScreencastFormatJpeg, Quality: &opts.Quality,
		MaxWidth: &opts.MaxWidth, MaxHeight: &opts.MaxHeight,
	}.Call(pg.p.Context(ctx))
	if err != nil {
		cancel()
		for range events { // let rod's relay goroutine end
		}
		return nil, classify(fmt.Errorf("start screencast: %w", err))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A page that does not paint again sends no frame: the viewport as
		// it is now comes first.
		if f, err := pg.stillFrame(sctx, opts); err == nil {
			fn(f)
		}
		for msg := range events {
			if msg.Method != "Page.screencastFrame" {
				continue
			}
			var e proto.PageScreencastFrame
			if !msg.Load(&e) {
				continue
			}
			fn(toFrame(e))
			actx, acancel := context.WithTimeout(sctx, screencastCall)
			_ = proto.PageScreencastFrameAck{SessionID: e.SessionID}.Call(pg.p.Context(actx))
			acancel()
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			// Told first so the browser stops painting for us; a closed
			// page or an ended ctx makes this fail, which is fine.
			c, ccancel := context.WithTimeout(context.WithoutCancel(ctx), screencastCall)
			if sctx.Err() == nil {
				_ = proto.PageStopScreencast{}.Call(pg.p.Context(c))
			}
			ccancel()
			cancel()
			<-done
		})
	}, nil
}

// stillFrame is a screenshot of the viewport as a screencast frame,
// scaled down to the screencast's maximum size.
func (pg *Page) stillFrame(ctx context.Context, opts ScreencastOptions) (ScreencastFrame, error) {
	ctx, cancel := context.WithTimeout(ctx, screencastCall)
	defer cancel()
	m, err := proto.PageGetLayoutMetrics{}.Call(pg.p.Context(ctx))
	if err != nil {
		return ScreencastFrame{}, fmt.Errorf("layout metrics: %w", err)
	}
	vp := m.CSSVisualViewport
	if vp == nil || vp.ClientWidth <= 0 || vp.ClientHeight <= 0 {
		return ScreencastFrame{}, errors.New("layout metrics: no viewport")
	}
	scale := min(1, float64(opts.MaxWidth)/vp.ClientWidth, float64(opts.MaxHeight)/vp.ClientHeight)
	shot, err := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatJpeg, Quality: &opts.Quality,
		Clip: &proto.PageViewport{X: vp.PageX, Y: vp.PageY, Width: vp.ClientWidth, Height: vp.ClientHeight, Scale: scale},
	}.Call(pg.p.Context(ctx))
	if err != nil {
		return ScreencastFrame{}, fmt.Errorf("capture: %w", err)
	}
	return ScreencastFrame{JPEG: shot.Data, Width: int(math.Round(vp.ClientWidth)),
		Height: int(math.Round(vp.ClientHeight)), Time: time.Now()}, nil
}

// toFrame converts a CDP screencast frame.
func toFrame(e proto.PageScreencastFrame) ScreencastFrame {
	f := ScreencastFrame{JPEG: e.Data, Time: time.Now()}
	if m := e.Metadata; m != nil {
		f.Width, f.Height = int(math.Round(m.DeviceWidth)), int(math.Round(m.DeviceHeight))
		if m.Timestamp > 0 {
			f.Time = m.Timestamp.Time()
		}
	}
	return f
}
