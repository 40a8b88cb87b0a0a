package worker

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	_ "image/png" // screenshots are PNG

	"golang.org/x/image/draw"

	"github.com/wayfinder/wayfinder/internal/store"
)

const (
	// thumbnailWidth is the width of step thumbnails (timelines).
	thumbnailWidth = 320
	// thumbnailQuality is their JPEG quality.
	thumbnailQuality = 75
)

// thumbnail returns a JPEG of screenshot scaled to thumbnailWidth pixels
// wide (never enlarged), keeping its aspect ratio.
func thumbnail(screenshot []byte) ([]byte, error) {
	src, _, err := image.Decode(bytes.NewReader(screenshot))
	if err != nil {
		return nil, fmt.Errorf("decode screenshot: %w", err)
	}
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	if w == 0 || h == 0 {
		return nil, fmt.Errorf("empty screenshot")
	}
	if w > thumbnailWidth {
		w, h = thumbnailWidth, max(1, h*thumbnailWidth/w)
	}
	var dst image.Image
	if b.Min != (image.Point{}) {
		src = subImage{src} // not a decoded image: the general path
	}
	switch src := src.(type) {
	case *image.RGBA:
		dst = &image.RGBA{Pix: boxScale(src.Pix, src.Stride, b.Dx(), b.Dy(), w, h), Stride: 4 * w, Rect: image.Rect(0, 0, w, h)}
	case *image.NRGBA:
		dst = &image.NRGBA{Pix: boxScale(src.Pix, src.Stride, b.Dx(), b.Dy(), w, h), Stride: 4 * w, Rect: image.Rect(0, 0, w, h)}
	default:
		// Bilinear over the whole source (not the approximate variant),
		// so a reduction averages pixels instead of skipping them.
		rgba := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.BiLinear.Scale(rgba, rgba.Bounds(), src, b, draw.Src, nil)
		dst = rgba
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, dst, &jpeg.Options{Quality: thumbnailQuality}); err != nil {
		return nil, fmt.Errorf("encode thumbnail: %w", err)
	}
	return out.Bytes(), nil
}

// saveThumbnail stores a step's thumbnail as media and returns its ID; on
// failure it logs and returns "" (a step is recorded without one).
func (s *sink) saveThumbnail(ctx context.Context, step int, screenshot []byte) string {
	jpg, err := thumbnail(screenshot)
	if err == nil {
		var id string
		id, err = s.store.SaveMedia(ctx, s.runID, int32(step), &store.Media{ContentType: "image/jpeg", Data: jpg})
		if err == nil {
			return id
		}
	}
	s.logger().WarnContext(ctx, "step thumbnail not stored", "step", step, "error", err)
	return ""
}

// subImage hides an image's concrete type.
type subImage struct{ image.Image }

// boxScale shrinks 4-byte pixels (RGBA or NRGBA, sw x sh with the given
// stride) to dw x dh by averaging each output pixel's source rectangle: a
// box filter, four times faster than x/image/draw's bilinear kernel on a
// screenshot and as smooth when shrinking.
func boxScale(pix []byte, stride, sw, sh, dw, dh int) []byte {
	out := make([]byte, 4*dw*dh)
	for y := range dh {
		y0, y1 := y*sh/dh, max((y+1)*sh/dh, y*sh/dh+1)
		for x := range dw {
			x0, x1 := x*sw/dw, max((x+1)*sw/dw, x*sw/dw+1)
			var sum [4]uint32
			for sy := y0; sy < y1; sy++ {
				row := pix[sy*stride+4*x0 : sy*stride+4*x1]
				for i := 0; i < len(row); i += 4 {
					sum[0] += uint32(row[i])
					sum[1] += uint32(row[i+1])
					sum[2] += uint32(row[i+2])
					sum[3] += uint32(row[i+3])
				}
			}
			n := uint32((y1 - y0) * (x1 - x0))
			o := 4 * (y*dw + x)
			for c := range 4 {
				out[o+c] = uint8((sum[c] + n/2) / n)
			}
		}
	}
	return out
}
