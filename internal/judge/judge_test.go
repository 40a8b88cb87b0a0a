package judge

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFrequencyDue(t *testing.T) {
	t.Parallel()
	moving := steps(6, each("https://a/"), each("h"))
	still := func(n int) []StepSummary {
		return append(steps(6-n, each("https://a/"), each("h")), steps(n, same("https://b/"), same("still"))...)
	}
	tests := []struct {
		name  string
		f     Frequency
		step  int
		steps []StepSummary
		claim bool
		want  bool
	}{
		{name: "zero value: every step", step: 1, want: true},
		{name: "every step", f: Frequency{EveryN: 1}, step: 7, want: true},
		{name: "every 3rd: step 1", f: Frequency{EveryN: 3}, step: 1, want: false},
		{name: "every 3rd: step 2", f: Frequency{EveryN: 3}, step: 2, want: false},
		{name: "every 3rd: step 3", f: Frequency{EveryN: 3}, step: 3, want: true},
		{name: "every 3rd: step 6", f: Frequency{EveryN: 3}, step: 6, want: true},
		{name: "every 3rd: step 7", f: Frequency{EveryN: 3}, step: 7, want: false},
		{name: "every 3rd: claim at step 4", f: Frequency{EveryN: 3}, step: 4, claim: true, want: true},
		{name: "on stagnation: page moving", f: Frequency{OnStagnation: 2}, step: 6, steps: moving, want: false},
		{name: "on stagnation: 1 still step", f: Frequency{OnStagnation: 2}, step: 6, steps: still(1), want: false},
		{name: "on stagnation: 2 still steps", f: Frequency{OnStagnation: 2}, step: 6, steps: still(2), want: true},
		{name: "on stagnation: 4 still steps", f: Frequency{OnStagnation: 3}, step: 6, steps: still(4), want: true},
		{name: "on stagnation: no steps", f: Frequency{OnStagnation: 1}, step: 1, want: false},
		{name: "on stagnation: claim", f: Frequency{OnStagnation: 3}, step: 6, steps: moving, claim: true, want: true},
		{name: "on stagnation and every 2nd: odd step", f: Frequency{EveryN: 2, OnStagnation: 2}, step: 5, steps: still(3), want: false},
		{name: "on stagnation and every 2nd: even step", f: Frequency{EveryN: 2, OnStagnation: 2}, step: 6, steps: still(3), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Context{Goal: "g", StepNumber: tt.step, MaxSteps: 20, Steps: tt.steps}
			if tt.claim {
				c.Claim = &Claim{Status: ClaimSuccess}
			}
			require.Equal(t, tt.want, tt.f.Due(c))
		})
	}
	require.False(t, Frequency{}.Due(nil))
}
