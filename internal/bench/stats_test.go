package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"one", []float64{7}, Summary{N: 1, Median: 7, P95: 7, Min: 7, Max: 7}},
		{"even count interpolates the median", []float64{4, 1, 3, 2}, Summary{N: 4, Median: 2.5, P95: 3.85, Min: 1, Max: 4}},
		// 15 samples: p95 sits at rank 13.3 (0-based), between 14 and 15.
		{"fifteen", []float64{15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1},
			Summary{N: 15, Median: 8, P95: 14.3, Min: 1, Max: 15}},
		{"outlier moves p95, not the median", []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 1000},
			Summary{N: 10, Median: 10, P95: 554.5, Min: 10, Max: 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Summarize(tt.in)
			require.Equal(t, tt.want.N, got.N)
			require.InDelta(t, tt.want.Median, got.Median, 1e-9)
			require.InDelta(t, tt.want.P95, got.P95, 1e-9)
			require.InDelta(t, tt.want.Min, got.Min, 1e-9)
			require.InDelta(t, tt.want.Max, got.Max, 1e-9)
		})
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	t.Parallel()
	in := []float64{3, 1, 2}
	Summarize(in)
	require.Equal(t, []float64{3, 1, 2}, in)
}

func TestSummarizeDurationsAndInts(t *testing.T) {
	t.Parallel()
	d := SummarizeDurations([]time.Duration{1500 * time.Microsecond, 2500 * time.Microsecond, 2 * time.Millisecond})
	require.Equal(t, 3, d.N)
	require.InDelta(t, 2.0, d.Median, 1e-9)
	require.InDelta(t, 2.5, d.Max, 1e-9)
	n := SummarizeInts([]int{100, 300, 200})
	require.InDelta(t, 200.0, n.Median, 1e-9)
}

func TestRatio(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		ours, theirs float64
		want         float64
		wantDefined  bool
	}{
		{"half", 50, 100, 0.5, true},
		{"ours larger", 300, 100, 3, true},
		{"theirs not measured", 50, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := Ratio(tt.ours, tt.theirs)
			require.Equal(t, tt.wantDefined, ok)
			require.InDelta(t, tt.want, got, 1e-9)
		})
	}
}
