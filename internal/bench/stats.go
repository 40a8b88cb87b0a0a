package bench

import (
	"math"
	"slices"
	"time"
)

// Summary describes a sample of measurements of one quantity.
type Summary struct {
	// N is the number of measurements; a zero Summary means "not measured".
	N int
	// Median and P95 are interpolated between the closest ranks (the
	// method numpy and R use by default), so p95 of 15 samples lies
	// between the 14th and the 15th.
	Median, P95 float64
	// Min and Max bound the sample.
	Min, Max float64
}

// Summarize returns the summary of xs; the zero Summary when xs is empty.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Summary{
		N:      len(s),
		Median: quantile(s, 0.5),
		P95:    quantile(s, 0.95),
		Min:    s[0],
		Max:    s[len(s)-1],
	}
}

// SummarizeDurations summarizes ds in milliseconds.
func SummarizeDurations(ds []time.Duration) Summary {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d) / float64(time.Millisecond)
	}
	return Summarize(xs)
}

// SummarizeInts summarizes counts (characters, tokens, bytes).
func SummarizeInts(ns []int) Summary {
	xs := make([]float64, len(ns))
	for i, n := range ns {
		xs[i] = float64(n)
	}
	return Summarize(xs)
}

// quantile returns the q-quantile of sorted (not empty) by linear
// interpolation between the closest ranks.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	frac := pos - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}

// Ratio returns ours/theirs and whether it is defined (both measured and
// theirs not zero).
func Ratio(ours, theirs float64) (float64, bool) {
	if theirs == 0 || math.IsNaN(ours) || math.IsNaN(theirs) {
		return 0, false
	}
	return ours / theirs, true
}
