package browser_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"image/png"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

func capture(t *testing.T, page *browser.Page, opts browser.ScreenshotOptions) (*browser.Image, image.Image) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	img, err := page.Capture(ctx, opts)
	require.NoError(t, err)
	var decoded image.Image
	if img.Format == browser.FormatPNG {
		decoded, err = png.Decode(bytes.NewReader(img.Data))
	} else {
		decoded, err = jpeg.Decode(bytes.NewReader(img.Data))
	}
	require.NoError(t, err)
	require.Equal(t, img.Width, decoded.Bounds().Dx())
	require.Equal(t, img.Height, decoded.Bounds().Dy())
	return img, decoded
}

func TestCapture(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "table.html")

	t.Run("formats and sizes", func(t *testing.T) {
		cases := []struct {
			name          string
			opts          browser.ScreenshotOptions
			format        string
			width, height int
		}{
			{"viewport png", browser.ScreenshotOptions{}, browser.FormatPNG, 1280, 800},
			{"viewport jpeg", browser.ScreenshotOptions{Format: "jpeg", Quality: 60}, browser.FormatJPEG, 1280, 800},
			{"max width", browser.ScreenshotOptions{MaxWidth: 640}, browser.FormatPNG, 640, 400},
			{"max height", browser.ScreenshotOptions{Format: "jpg", MaxHeight: 200}, browser.FormatJPEG, 320, 200},
			{"bounds larger than the capture", browser.ScreenshotOptions{MaxWidth: 4000, MaxHeight: 4000}, browser.FormatPNG, 1280, 800},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				img, _ := capture(t, page, c.opts)
				require.Equal(t, c.format, img.Format)
				require.Equal(t, c.width, img.Width)
				require.Equal(t, c.height, img.Height)
				require.InDelta(t, float64(c.width)/1280, img.Scale, 0.001)
			})
		}
	})

	t.Run("jpeg quality", func(t *testing.T) {
		low, _ := capture(t, page, browser.ScreenshotOptions{Format: browser.FormatJPEG, Quality: 20})
		high, _ := capture(t, page, browser.ScreenshotOptions{Format: browser.FormatJPEG, Quality: 95})
		require.Less(t, len(low.Data), len(high.Data))
	})

	t.Run("full page", func(t *testing.T) {
		s := snapshot(t, page, browser.SnapshotOptions{})
		img, _ := capture(t, page, browser.ScreenshotOptions{FullPage: true, Format: browser.FormatJPEG})
		require.Equal(t, 1280, img.Width)
		require.InDelta(t, s.Viewport.ContentHeight, float64(img.Height), 1)
		scaled, _ := capture(t, page, browser.ScreenshotOptions{FullPage: true, MaxHeight: 2000})
		require.Equal(t, 2000, scaled.Height)
		require.Less(t, scaled.Width, 1280)
	})

	t.Run("unknown format", func(t *testing.T) {
		_, err := page.Capture(context.Background(), browser.ScreenshotOptions{Format: "gif"})
		require.Error(t, err)
	})
}

func TestCaptureSetOfMarks(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "form.html")
	s := snapshot(t, page, browser.SnapshotOptions{})
	submit := mustFind(t, s, "button", "Create account")

	differs := func(a, b image.Image, x, y int) bool {
		r1, g1, b1, _ := a.At(x, y).RGBA()
		r2, g2, b2, _ := b.At(x, y).RGBA()
		return r1 != r2 || g1 != g2 || b1 != b2
	}
	plain, plainImg := capture(t, page, browser.ScreenshotOptions{})
	marked, markedImg := capture(t, page, browser.ScreenshotOptions{Marks: s})
	require.Equal(t, plain.Width, marked.Width)
	require.Equal(t, plain.Height, marked.Height)
	// The outline runs along the box's left edge.
	x, y := int(submit.Box.X), int(submit.Box.Y+submit.Box.Height/2)
	require.True(t, differs(plainImg, markedImg, x, y), "no mark at the left edge of %s", submit.Ref)
	// Far from every element the page is untouched.
	require.False(t, differs(plainImg, markedImg, 1275, 795))

	t.Run("scaled jpeg", func(t *testing.T) {
		small, smallImg := capture(t, page, browser.ScreenshotOptions{Marks: s, MaxWidth: 640, Format: browser.FormatJPEG})
		require.Equal(t, browser.FormatJPEG, small.Format)
		require.Equal(t, 640, small.Width)
		_, plainSmall := capture(t, page, browser.ScreenshotOptions{MaxWidth: 640, Format: browser.FormatJPEG})
		require.True(t, differsNear(plainSmall, smallImg, x/2, y/2))
	})

	t.Run("full page of a scrolled page", func(t *testing.T) {
		eval(t, page, `() => window.scrollTo(0, 40)`)
		scrolled := snapshot(t, page, browser.SnapshotOptions{})
		btn := mustFind(t, scrolled, "button", "Create account")
		require.InDelta(t, submit.Box.Y-40, btn.Box.Y, 1)
		_, full := capture(t, page, browser.ScreenshotOptions{FullPage: true})
		_, fullMarked := capture(t, page, browser.ScreenshotOptions{FullPage: true, Marks: scrolled})
		// In the full page the button sits at its document position.
		require.True(t, differs(full, fullMarked, int(btn.Box.X), int(btn.Box.Y+40+btn.Box.Height/2)))
	})
}

// differsNear reports whether two lossy images differ clearly somewhere in
// the 5x5 pixels around (x, y).
func differsNear(a, b image.Image, x, y int) bool {
	for dx := -2; dx <= 2; dx++ {
		for dy := -2; dy <= 2; dy++ {
			r1, g1, b1, _ := a.At(x+dx, y+dy).RGBA()
			r2, g2, b2, _ := b.At(x+dx, y+dy).RGBA()
			if absDiff(r1, r2)+absDiff(g1, g2)+absDiff(b1, b2) > 3*0x2000 {
				return true
			}
		}
	}
	return false
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}
