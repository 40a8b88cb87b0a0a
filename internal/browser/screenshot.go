package browser

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math"
	"strings"

	"github.com/go-rod/rod/lib/proto"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Image formats of ScreenshotOptions.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
)

// ScreenshotOptions shape a capture.
type ScreenshotOptions struct {
	// Format is FormatPNG or FormatJPEG. Default PNG.
	Format string
	// Quality of a JPEG, 1–100. Default 80.
	Quality int
	// MaxWidth and MaxHeight bound the image; a larger capture is scaled
	// down (by Chromium, keeping the aspect ratio). Default: no bound.
	MaxWidth, MaxHeight int
	// FullPage captures the whole scrollable page instead of the viewport.
	FullPage bool
	// Marks draws the ref of every element of this snapshot on its box
	// (set-of-marks, for vision models). The snapshot should be the page's
	// latest, taken at the same scroll position. Default: no marks.
	Marks *Snapshot
}

// Image is an encoded screenshot.
type Image struct {
	// Format is FormatPNG or FormatJPEG.
	Format string `json:"format"`
	// Width and Height in image pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// Scale is image pixels per CSS pixel (below 1 when scaled down).
	Scale float64 `json:"scale"`
	Data  []byte  `json:"data"`
}

// Capture takes a screenshot of the viewport or the full page. Marks are
// drawn in Go on the decoded capture rather than injected into the page:
// the page is never touched (no layout shift, no mutation observers firing,
// no CSP in the way), and labels land on frames and closed shadow roots
// alike because they use the snapshot's top-page boxes. Errors wrap
// ErrBrowserGone or are ctx's.
func (pg *Page) Capture(ctx context.Context, opts ScreenshotOptions) (*Image, error) {
	switch strings.ToLower(opts.Format) {
	case "", FormatPNG:
		opts.Format = FormatPNG
	case FormatJPEG, "jpg":
		opts.Format = FormatJPEG
	default:
		return nil, fmt.Errorf("screenshot: unknown format %q (png or jpeg)", opts.Format)
	}
	if opts.Quality <= 0 || opts.Quality > 100 {
		opts.Quality = 80
	}
	p := pg.p.Context(ctx)
	m, err := proto.PageGetLayoutMetrics{}.Call(p)
	if err != nil {
		return nil, pg.captureErr(ctx, err)
	}
	vv := m.CSSVisualViewport
	clip := &proto.PageViewport{X: vv.PageX, Y: vv.PageY, Width: vv.ClientWidth, Height: vv.ClientHeight}
	if opts.FullPage {
		clip = &proto.PageViewport{Width: m.CSSContentSize.Width, Height: m.CSSContentSize.Height}
	}
	scale := 1.0
	if opts.MaxWidth > 0 && clip.Width > float64(opts.MaxWidth) {
		scale = float64(opts.MaxWidth) / clip.Width
	}
	if opts.MaxHeight > 0 && clip.Height*scale > float64(opts.MaxHeight) {
		scale = float64(opts.MaxHeight) / clip.Height
	}
	clip.Scale = scale
	req := proto.PageCaptureScreenshot{
		Format:                proto.PageCaptureScreenshotFormatPng,
		Clip:                  clip,
		CaptureBeyondViewport: opts.FullPage,
	}
	marks := opts.Marks != nil && len(opts.Marks.Elements) > 0
	if opts.Format == FormatJPEG && !marks {
		// With marks the capture is decoded and re-encoded: a lossless
		// capture avoids compressing twice.
		req.Format = proto.PageCaptureScreenshotFormatJpeg
		q := opts.Quality
		req.Quality = &q
	}
	res, err := req.Call(p)
	if err != nil {
		return nil, pg.captureErr(ctx, err)
	}
	img := &Image{Format: opts.Format, Scale: scale, Data: res.Data}
	if !marks {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(res.Data))
		if err != nil {
			return nil, fmt.Errorf("screenshot: decode: %w", err)
		}
		img.Width, img.Height = cfg.Width, cfg.Height
		return img, nil
	}
	decoded, err := png.Decode(bytes.NewReader(res.Data))
	if err != nil {
		return nil, fmt.Errorf("screenshot: decode: %w", err)
	}
	rgba := image.NewRGBA(decoded.Bounds())
	draw.Draw(rgba, rgba.Bounds(), decoded, decoded.Bounds().Min, draw.Src)
	// Element boxes are viewport coordinates at the snapshot's scroll; the
	// image starts at the clip's corner.
	offX, offY := opts.Marks.Viewport.ScrollX-clip.X, opts.Marks.Viewport.ScrollY-clip.Y
	drawMarks(rgba, opts.Marks.Elements, offX, offY, scale)
	var buf bytes.Buffer
	if opts.Format == FormatJPEG {
		err = jpeg.Encode(&buf, rgba, &jpeg.Options{Quality: opts.Quality})
	} else {
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, rgba)
	}
	if err != nil {
		return nil, fmt.Errorf("screenshot: encode: %w", err)
	}
	img.Data = buf.Bytes()
	img.Width, img.Height = rgba.Bounds().Dx(), rgba.Bounds().Dy()
	return img, nil
}

func (pg *Page) captureErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("screenshot: %w", context.Cause(ctx))
	}
	return classify(fmt.Errorf("screenshot: %w", err))
}

// markColors are distinct, saturated colors that read against most pages;
// white label text stays legible on each.
var markColors = []color.RGBA{
	{R: 0xe6, G: 0x19, B: 0x4b, A: 0xff}, {R: 0x3c, G: 0x8d, B: 0x2f, A: 0xff},
	{R: 0x43, G: 0x63, B: 0xd8, A: 0xff}, {R: 0xd4, G: 0x6a, B: 0x00, A: 0xff},
	{R: 0x91, G: 0x1e, B: 0xb4, A: 0xff}, {R: 0x00, G: 0x80, B: 0x80, A: 0xff},
}

// drawMarks outlines each actionable element and labels it with its ref (without the
// "@"), above the box when there is room, else inside its top-left corner.
func drawMarks(img *image.RGBA, els []Element, offX, offY, scale float64) {
	face := basicfont.Face7x13
	bounds := img.Bounds()
	for k, e := range els {
		if !markable(e.Role) {
			continue
		}
		col := markColors[k%len(markColors)]
		r := image.Rect(
			int(math.Floor((e.Box.X+offX)*scale)), int(math.Floor((e.Box.Y+offY)*scale)),
			int(math.Ceil((e.Box.X+offX+e.Box.Width)*scale)), int(math.Ceil((e.Box.Y+offY+e.Box.Height)*scale)),
		)
		if !r.Overlaps(bounds) {
			continue
		}
		strokeRect(img, r, 2, col)
		label := strings.TrimPrefix(e.Ref, "@")
		lw, lh := face.Advance*len(label)+4, face.Height+2
		lx, ly := r.Min.X, r.Min.Y-lh
		if ly < bounds.Min.Y {
			ly = r.Min.Y
		}
		lx = max(bounds.Min.X, min(lx, bounds.Max.X-lw))
		lr := image.Rect(lx, ly, lx+lw, ly+lh)
		draw.Draw(img, lr, &image.Uniform{C: col}, image.Point{}, draw.Src)
		d := font.Drawer{Dst: img, Src: image.White, Face: face, Dot: fixed.P(lx+2, ly+face.Ascent+1)}
		d.DrawString(label)
	}
}

// markable: marks go on what the model can act on; headings and
// landmarks would only cover the page with wide boxes.
func markable(role string) bool {
	switch role {
	case "heading", "region", "dialog", "alertdialog", "alert":
		return false
	}
	return true
}

// strokeRect draws r's outline w pixels wide, clipped to the image.
func strokeRect(img *image.RGBA, r image.Rectangle, w int, c color.RGBA) {
	u := &image.Uniform{C: c}
	for _, s := range []image.Rectangle{
		image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+w),
		image.Rect(r.Min.X, r.Max.Y-w, r.Max.X, r.Max.Y),
		image.Rect(r.Min.X, r.Min.Y, r.Min.X+w, r.Max.Y),
		image.Rect(r.Max.X-w, r.Min.Y, r.Max.X, r.Max.Y),
	} {
		draw.Draw(img, s.Intersect(img.Bounds()), u, image.Point{}, draw.Src)
	}
}
