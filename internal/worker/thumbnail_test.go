package worker

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"
)

// testPNG is a w x h PNG, white on the left half and dark blue on the
// right, of a color model: "rgba" (opaque), "nrgba" (with a translucent
// pixel) or "paletted".
func testPNG(t testing.TB, w, h int, model string) []byte {
	t.Helper()
	white, blue := color.RGBA{255, 255, 255, 255}, color.RGBA{0, 0, 128, 255}
	var img draw.Image = image.NewRGBA(image.Rect(0, 0, w, h))
	switch model {
	case "nrgba":
		img = image.NewNRGBA(img.Bounds())
	case "paletted":
		img = image.NewPaletted(img.Bounds(), color.Palette{white, blue})
	}
	for y := range h {
		for x := range w {
			c := white
			if x >= w/2 {
				c = blue
			}
			img.Set(x, y, c)
		}
	}
	if model == "nrgba" {
		img.Set(0, 0, color.NRGBA{255, 255, 255, 128})
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func TestThumbnail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		model        string
		w, h         int
		wantW, wantH int
	}{
		{"a viewport screenshot", "rgba", 1280, 800, 320, 200},
		{"with transparency", "nrgba", 1280, 800, 320, 200},
		{"paletted", "paletted", 1280, 800, 320, 200},
		{"a tall page", "rgba", 1000, 3000, 320, 960},
		{"an odd width", "rgba", 1001, 333, 320, 106},
		{"already small: never enlarged", "rgba", 200, 100, 200, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jpg, err := thumbnail(testPNG(t, tc.w, tc.h, tc.model))
			require.NoError(t, err)
			img, err := jpeg.Decode(bytes.NewReader(jpg))
			require.NoError(t, err)
			require.Equal(t, tc.wantW, img.Bounds().Dx())
			require.Equal(t, tc.wantH, img.Bounds().Dy())
			// The picture survives: white on the left, dark on the right.
			r, g, b, _ := img.At(tc.wantW/4, tc.wantH/2).RGBA()
			require.Greater(t, r>>8+g>>8+b>>8, uint32(700))
			r, g, b, _ = img.At(3*tc.wantW/4, tc.wantH/2).RGBA()
			require.Less(t, r>>8+g>>8, uint32(40))
			require.Greater(t, b>>8, uint32(100))
		})
	}
	_, err := thumbnail([]byte("not an image"))
	require.Error(t, err)
}

// BenchmarkThumbnail is the cost a step pays for its thumbnail (a 1280x800
// PNG screenshot to a 320 px JPEG).
func BenchmarkThumbnail(b *testing.B) {
	shot := testPNG(b, 1280, 800, "rgba")
	for b.Loop() {
		if _, err := thumbnail(shot); err != nil {
			b.Fatal(err)
		}
	}
}
