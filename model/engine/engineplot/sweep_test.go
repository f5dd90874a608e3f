package engineplot

import (
	"bytes"
	"image/png"
	"testing"
	"time"

	"github.com/stride-lm/stride/model/engine"
	"github.com/stride-lm/stride/tensor"
)

// SweepPNG gives a PNG of the documented size (1200 × 380 points at
// vgimg's default 96 dpi) whatever the points.
func TestSweepPNG(t *testing.T) {
	var points []engine.ComparePoint
	for _, L := range []int{64, 256, 1024} {
		r := engine.PathReport{PrefillTime: time.Duration(L) * time.Microsecond, DecodeTime: time.Millisecond, DecodeTokens: 4,
			Stats: tensor.Stats{BytesCopied: int64(L) << 12}}
		points = append(points, engine.NewComparePoint(L, &engine.Comparison{Naive: r, Fused: r}))
	}
	img, err := SweepPNG("tiny", points)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := img.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(&b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 1600 || cfg.Height != 507 {
		t.Errorf("PNG is %d × %d pixels, want 1600 × 507", cfg.Width, cfg.Height)
	}
}
