package judge

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// step is a test step: URL, screenshot hash and actions.
func step(n int, url, hash string, acts ...Action) StepSummary {
	return StepSummary{Number: n, URL: url, Title: "Title " + url, ScreenshotHash: hash, Actions: acts}
}

var (
	clickOK   = Action{Tool: "click", Args: "@e5", Outcome: "ok"}
	clickFail = Action{Tool: "click", Args: "@e5", Outcome: "not_found"}
	claimAct  = Action{Tool: "complete_task", Args: `"success"`}
)

// steps builds n steps from per-step URL and hash functions.
func steps(n int, url, hash func(i int) string, acts ...Action) []StepSummary {
	out := make([]StepSummary, n)
	for i := range out {
		out[i] = step(i+1, url(i), hash(i), acts...)
	}
	return out
}

func same(s string) func(int) string { return func(int) string { return s } }
func each(prefix string) func(int) string {
	return func(i int) string { return fmt.Sprintf("%s%d", prefix, i) }
}
func cycle(ss ...string) func(int) string { return func(i int) string { return ss[i%len(ss)] } }

func TestHeuristicSigns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		h          Heuristic
		steps      []StepSummary
		wantSign   bool
		wantFailed bool
		feedback   string // substring of Feedback
	}{
		{name: "no steps", steps: nil},
		{name: "progress", steps: steps(6, each("https://a/"), each("h"), clickOK)},
		{name: "two unchanged is not yet stagnation", steps: steps(2, same("https://a/"), same("h"), clickOK)},
		{name: "stagnation", steps: steps(3, same("https://a/"), same("h"), clickOK),
			wantSign: true, feedback: "The page has not changed for 3 steps; try a different element or approach."},
		{name: "stagnation only counts trailing steps",
			steps:    append(steps(5, same("https://a/"), same("h"), clickOK), step(6, "https://a/", "other", clickOK)),
			wantSign: false},
		{name: "no screenshots is not stagnation", steps: steps(5, same("https://a/"), same(""), clickOK)},
		{name: "stagnation threshold configurable", h: Heuristic{StagnationSteps: 5},
			steps: steps(4, same("https://a/"), same("h"), clickOK)},
		{name: "stagnation check off", h: Heuristic{StagnationSteps: -1, FailAfter: -1},
			steps: steps(10, same("https://a/"), same("h"), clickOK)},
		{name: "stagnation fails after 8", steps: steps(8, same("https://a/"), same("h"), clickOK),
			wantSign: true, wantFailed: true},
		{name: "stagnation 7 does not fail yet", steps: steps(7, same("https://a/"), same("h"), clickOK),
			wantSign: true},
		{name: "fail after configurable", h: Heuristic{FailAfter: 4}, steps: steps(4, same("https://a/"), same("h"), clickOK),
			wantSign: true, wantFailed: true},
		{name: "fail after off", h: Heuristic{FailAfter: -1}, steps: steps(20, same("https://a/"), same("h"), clickOK),
			wantSign: true},
		{name: "loop A B A B", steps: steps(4, cycle("https://a/", "https://b/"), each("h"), clickOK),
			wantSign: true, feedback: "going round in circles for 4 steps (https://a/ → https://b/)"},
		{name: "A B A is not yet a loop", steps: steps(3, cycle("https://a/", "https://b/"), each("h"), clickOK)},
		{name: "loop A B C A B C", steps: steps(6, cycle("https://a/", "https://b/", "https://c/"), each("h"), clickOK),
			wantSign: true, feedback: "https://a/ → https://b/ → https://c/"},
		{name: "loop after progress", steps: append(steps(3, each("https://p/"), each("p"), clickOK),
			steps(4, cycle("https://a/", "https://b/"), each("h"), clickOK)...), wantSign: true},
		{name: "loop fails after 8", steps: steps(8, cycle("https://a/", "https://b/"), each("h"), clickOK),
			wantSign: true, wantFailed: true},
		{name: "loop check off", h: Heuristic{LoopSteps: -1}, steps: steps(6, cycle("https://a/", "https://b/"), each("h"), clickOK)},
		{name: "repeated errors", steps: steps(3, each("https://a/"), each("h"), clickFail),
			wantSign: true, feedback: "The last 3 steps failed the same way (click @e5 → not_found)"},
		{name: "two errors is not yet repeated", steps: steps(2, each("https://a/"), each("h"), clickFail)},
		{name: "different errors are not repeated", steps: []StepSummary{
			step(1, "https://a/1", "1", Action{Tool: "click", Args: "@e1", Outcome: "not_found"}),
			step(2, "https://a/2", "2", Action{Tool: "click", Args: "@e2", Outcome: "not_found"}),
			step(3, "https://a/3", "3", Action{Tool: "click", Args: "@e3", Outcome: "not_found"}),
		}},
		{name: "repeated step error", steps: []StepSummary{
			{Number: 1, URL: "https://a/1", ScreenshotHash: "1", Error: "navigation timeout"},
			{Number: 2, URL: "https://a/2", ScreenshotHash: "2", Error: "navigation timeout"},
			{Number: 3, URL: "https://a/3", ScreenshotHash: "3", Error: "navigation timeout"},
		}, wantSign: true, feedback: "navigation timeout"},
		{name: "repeated errors fail after 8", steps: steps(8, each("https://a/"), each("h"), clickFail),
			wantSign: true, wantFailed: true},
		{name: "error run broken by success", steps: append(steps(5, each("https://a/"), each("h"), clickFail),
			step(6, "https://z/", "z", clickOK))},
		{name: "repeated errors off", h: Heuristic{RepeatedErrors: -1}, steps: steps(5, each("https://a/"), each("h"), clickFail)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := tt.h.Evaluate(context.Background(), &Context{Goal: "g", StepNumber: len(tt.steps), MaxSteps: 50, Steps: tt.steps})
			require.NoError(t, err)
			require.Equal(t, SourceHeuristic, v.Source)
			require.False(t, v.Done)
			require.Equal(t, tt.wantFailed, v.Failed, "Failed; verdict %+v", v)
			require.Equal(t, tt.wantFailed, v.Conclusive, "Conclusive")
			require.NotEmpty(t, v.Reason)
			if !tt.wantSign {
				require.Empty(t, v.Feedback)
				require.Empty(t, v.SuggestedNextAction)
				require.Zero(t, v.Confidence)
				return
			}
			require.NotEmpty(t, v.Feedback)
			require.NotEmpty(t, v.SuggestedNextAction)
			require.Contains(t, v.Feedback, tt.feedback)
			require.Greater(t, v.Confidence, 0.0)
		})
	}
}

func TestHeuristicCombinesSigns(t *testing.T) {
	t.Parallel()
	// Same page, same failing click: both stagnation and repeated errors.
	c := &Context{Goal: "g", Steps: steps(4, same("https://a/"), same("h"), clickFail)}
	v, err := (&Heuristic{}).Evaluate(context.Background(), c)
	require.NoError(t, err)
	require.Contains(t, v.Feedback, "failed the same way")
	require.Contains(t, v.Feedback, "has not changed for 4 steps")
	require.False(t, v.Failed)
}

func TestHeuristicClaims(t *testing.T) {
	t.Parallel()
	progress := steps(3, each("https://a/"), each("h"), clickOK)
	withClaim := func(ss []StepSummary, last ...Action) []StepSummary {
		ss = append([]StepSummary(nil), ss...)
		return append(ss, step(len(ss)+1, "https://done/", "done", last...))
	}
	tests := []struct {
		name                          string
		claim                         Claim
		steps                         []StepSummary
		wantDone, wantFailed, wantCon bool
		reason, feedback              string
	}{
		{name: "failed claim accepted", claim: Claim{Status: ClaimFailed, Reason: "no such account"},
			steps: progress, wantFailed: true, wantCon: true, reason: "no such account"},
		{name: "failed claim accepted despite errors", claim: Claim{Status: ClaimFailed},
			steps: steps(5, each("https://a/"), each("h"), clickFail), wantFailed: true, wantCon: true},
		{name: "success confirmed", claim: Claim{Status: ClaimSuccess, Reason: "order placed"},
			steps: withClaim(progress, clickOK, claimAct), wantDone: true, reason: "order placed"},
		{name: "success confirmed with claim-only step", claim: Claim{Status: ClaimSuccess},
			steps: withClaim(progress, claimAct), wantDone: true},
		{name: "success confirmed on a still page", claim: Claim{Status: ClaimSuccess},
			steps: withClaim(steps(9, same("https://done/"), same("done"), clickOK), claimAct), wantDone: true},
		{name: "success contradicted by failed last action", claim: Claim{Status: ClaimSuccess},
			steps: withClaim(progress, clickOK, clickFail, claimAct), wantCon: true,
			feedback: "the last action (click @e5) failed with not_found"},
		{name: "failed action in the step before a claim-only step", claim: Claim{Status: ClaimSuccess},
			steps: withClaim(append(progress, step(4, "https://x/", "x", clickFail)), claimAct), wantCon: true,
			feedback: "failed with not_found"},
		{name: "earlier failure then success is fine", claim: Claim{Status: ClaimSuccess},
			steps: withClaim(progress, clickFail, clickOK, claimAct), wantDone: true},
		{name: "success contradicted by step error", claim: Claim{Status: ClaimSuccess},
			steps: append(progress, StepSummary{Number: 4, URL: "https://x/", Error: "browser crashed"}), wantCon: true,
			feedback: "browser crashed"},
		{name: "success contradicted by an error in the claim step", claim: Claim{Status: ClaimSuccess},
			steps: append(steps(3, each("https://a/"), each("h"), Action{Tool: "type", Args: `@e8, "x"`, Outcome: "not_editable"}),
				StepSummary{Number: 4, URL: "https://a/", Error: "not_editable", Actions: []Action{claimAct}}),
			wantCon: true},
		{name: "success contradicted when the steps before it repeat an error", claim: Claim{Status: ClaimSuccess},
			steps:   withClaim(steps(3, each("https://a/"), each("h"), clickFail, Action{Tool: "scroll", Args: "down", Outcome: "ok"}), claimAct),
			wantCon: true, feedback: "the same error in the last 3 steps"},
		{name: "contradicted and stuck fails", claim: Claim{Status: ClaimSuccess},
			steps: steps(8, same("https://a/"), same("h"), clickFail), wantCon: true, wantFailed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			claim := tt.claim
			v, err := (&Heuristic{}).Evaluate(context.Background(), &Context{Goal: "g", Steps: tt.steps, Claim: &claim})
			require.NoError(t, err)
			require.Equal(t, tt.wantDone, v.Done, "Done; verdict %+v", v)
			require.Equal(t, tt.wantFailed, v.Failed, "Failed; verdict %+v", v)
			require.Equal(t, tt.wantCon, v.Conclusive, "Conclusive; verdict %+v", v)
			require.Contains(t, v.Reason, tt.reason)
			require.Contains(t, v.Feedback, tt.feedback)
			if tt.wantCon && !tt.wantFailed {
				require.Contains(t, v.Feedback, "not accepted")
			}
			if tt.wantDone {
				require.Empty(t, v.Feedback)
			}
		})
	}
}

func TestHeuristicErrors(t *testing.T) {
	t.Parallel()
	_, err := (&Heuristic{}).Evaluate(context.Background(), nil)
	require.Error(t, err)
	_, err = (&Heuristic{}).Evaluate(context.Background(), &Context{Claim: &Claim{Status: "maybe"}})
	require.ErrorContains(t, err, `unknown claim status "maybe"`)
}
