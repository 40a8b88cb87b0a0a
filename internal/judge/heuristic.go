package judge

import (
	"context"
	"fmt"
	"strings"
)

// Heuristic judges by rules alone, without a model: it notices a page that
// no longer changes, a navigation loop and the same error again and again,
// gives feedback at the first signs and fails the run when it has been stuck
// for FailAfter steps. It accepts "failed" claims and confirms "success"
// claims unless the evidence contradicts them.
//
// Zero fields take their defaults; a negative field turns its check off.
// A Heuristic is safe for concurrent use.
type Heuristic struct {
	// StagnationSteps: this many identical screenshots in a row mean the
	// page has stopped changing. Default 3.
	StagnationSteps int
	// LoopSteps: the last LoopSteps (or more) URLs repeating a cycle of
	// two or more pages (A→B→A→B…, at least two full cycles) mean a
	// navigation loop. Default 4.
	LoopSteps int
	// RepeatedErrors: this many steps in a row ending in the same error
	// mean the agent is repeating a failing approach. Default 3.
	RepeatedErrors int
	// FailAfter: stuck (any of the above) for this many steps fails the
	// run. Default 8.
	FailAfter int
}

// Heuristic defaults.
const (
	DefaultStagnationSteps = 3
	DefaultLoopSteps       = 4
	DefaultRepeatedErrors  = 3
	DefaultFailAfter       = 8
)

// maxLoopPeriod is the longest cycle (in pages) the loop check looks for.
const maxLoopPeriod = 4

var _ Judge = (*Heuristic)(nil)

// Evaluate judges c by the rules. It never calls anything and only fails on
// a nil Context or an unknown claim status.
func (h *Heuristic) Evaluate(_ context.Context, c *Context) (Verdict, error) {
	if c == nil {
		return Verdict{}, fmt.Errorf("judge: nil context")
	}
	cfg := h.config()
	if c.Claim != nil {
		return cfg.judgeClaim(c, cfg.signs(beforeClaim(c.Steps)))
	}
	s := cfg.signs(c.Steps)
	v := Verdict{Source: SourceHeuristic}
	if len(s.found) == 0 {
		v.Reason = "no sign of stagnation, loops or repeated errors"
		return v, nil
	}
	v.Feedback = strings.Join(s.feedback(), " ")
	v.SuggestedNextAction = s.found[0].next
	v.Reason = s.found[0].reason
	v.Confidence = 0.5
	if cfg.FailAfter > 0 && s.stuck >= cfg.FailAfter {
		v.Failed, v.Conclusive, v.Confidence = true, true, 0.9
		v.Reason = fmt.Sprintf("stuck for %d steps: %s", s.stuck, s.found[0].reason)
	}
	return v, nil
}

// config returns h with defaults filled in.
func (h *Heuristic) config() Heuristic {
	var cfg Heuristic
	if h != nil {
		cfg = *h
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&cfg.StagnationSteps, DefaultStagnationSteps)
	def(&cfg.LoopSteps, DefaultLoopSteps)
	def(&cfg.RepeatedErrors, DefaultRepeatedErrors)
	def(&cfg.FailAfter, DefaultFailAfter)
	return cfg
}

// sign is one finding of the heuristics.
type sign struct {
	// steps the finding spans.
	steps          int
	reason, advice string
	next           string
}

// signs are the findings on a run.
type signs struct {
	found []sign
	// stuck is the longest span of the findings, in steps.
	stuck int
	// errorRun is the number of trailing steps with the same error (0
	// when below the RepeatedErrors threshold or turned off).
	errorRun int
}

func (s signs) feedback() []string {
	out := make([]string, len(s.found))
	for i, f := range s.found {
		out[i] = f.advice
	}
	return out
}

// signs runs the three checks on steps.
func (cfg Heuristic) signs(steps []StepSummary) signs {
	var s signs
	add := func(f sign) {
		s.found = append(s.found, f)
		s.stuck = max(s.stuck, f.steps)
	}
	if n, sig := errorRun(steps); cfg.RepeatedErrors > 0 && n >= cfg.RepeatedErrors {
		s.errorRun = n
		add(sign{
			steps:  n,
			reason: fmt.Sprintf("the same error in the last %d steps: %s", n, sig),
			advice: fmt.Sprintf("The last %d steps failed the same way (%s); repeating it will not help.", n, sig),
			next:   "take a fresh look at the page and use a different element or approach",
		})
	}
	if n, cycle := loopRun(steps); cfg.LoopSteps > 0 && n >= cfg.LoopSteps {
		add(sign{
			steps:  n,
			reason: fmt.Sprintf("a navigation loop over the last %d steps: %s", n, strings.Join(cycle, " → ")),
			advice: fmt.Sprintf("You have been going round in circles for %d steps (%s).", n, strings.Join(cycle, " → ")),
			next:   "stop repeating the cycle; look for another way forward on the current page",
		})
	}
	if n := unchangedSteps(steps); cfg.StagnationSteps > 0 && n >= cfg.StagnationSteps {
		add(sign{
			steps:  n,
			reason: fmt.Sprintf("the page has not changed for %d steps", n),
			advice: fmt.Sprintf("The page has not changed for %d steps; try a different element or approach.", n),
			next:   "try a different element or approach (scroll, another control, or navigate directly)",
		})
	}
	return s
}

// judgeClaim verifies the agent's claim against the evidence.
func (cfg Heuristic) judgeClaim(c *Context, s signs) (Verdict, error) {
	v := Verdict{Source: SourceHeuristic}
	switch c.Claim.Status {
	case ClaimFailed:
		// The agent's judgment that the goal cannot be met is accepted
		// without verification (seed 002 §1.7.3).
		v.Failed, v.Conclusive, v.Confidence = true, true, 1
		v.Reason = "the agent reported that the goal cannot be met"
		if c.Claim.Reason != "" {
			v.Reason += ": " + c.Claim.Reason
		}
		return v, nil
	case ClaimSuccess:
	default:
		return Verdict{}, fmt.Errorf("judge: unknown claim status %q", c.Claim.Status)
	}
	var why string
	if a, ok := lastAction(c.Steps); ok && a.Failed() {
		why = fmt.Sprintf("the last action (%s) failed with %s", renderAction(a), a.Outcome)
	} else if n := len(c.Steps); n > 0 && c.Steps[n-1].Error != "" {
		why = "the last step ended with an error: " + c.Steps[n-1].Error
	} else if s.errorRun > 0 {
		why = s.found[0].reason
	}
	if why == "" {
		v.Done, v.Confidence = true, 0.5
		v.Reason = "the agent reported success and nothing contradicts it"
		if c.Claim.Reason != "" {
			v.Reason += ": " + c.Claim.Reason
		}
		return v, nil
	}
	v.Conclusive, v.Confidence = true, 0.8
	v.Reason = "the success claim is contradicted: " + why
	v.Feedback = fmt.Sprintf("Your claim of success was not accepted: %s. Check that the page shows the goal is met before claiming success again, or report failure if it cannot be met.", why)
	v.SuggestedNextAction = "verify the result on the current page, then claim again"
	if cfg.FailAfter > 0 && s.stuck >= cfg.FailAfter {
		v.Failed, v.Confidence = true, 0.9
		v.Reason = fmt.Sprintf("stuck for %d steps and the success claim is contradicted: %s", s.stuck, why)
	}
	return v, nil
}

// claimTool is the agent's tool for claiming to be finished; it is not
// evidence about the page.
const claimTool = "complete_task"

// lastAction returns the most recent action other than the claim itself.
func lastAction(steps []StepSummary) (Action, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		acts := steps[i].Actions
		for j := len(acts) - 1; j >= 0; j-- {
			if acts[j].Tool != claimTool {
				return acts[j], true
			}
		}
	}
	return Action{}, false
}

// beforeClaim drops a trailing step that did nothing but claim, so the
// claim is judged on the steps that led to it.
func beforeClaim(steps []StepSummary) []StepSummary {
	if n := len(steps); n > 0 && steps[n-1].Error == "" {
		for _, a := range steps[n-1].Actions {
			if a.Tool != claimTool {
				return steps
			}
		}
		return steps[:n-1]
	}
	return steps
}

// stepError is a step's error signature: the step's error, else its failed
// actions; "" when the step went fine.
func stepError(s StepSummary) string {
	if s.Error != "" {
		return s.Error
	}
	var failed []string
	for _, a := range s.Actions {
		if a.Failed() {
			failed = append(failed, renderAction(a)+" → "+a.Outcome)
		}
	}
	return strings.Join(failed, "; ")
}

// errorRun counts the trailing steps with the same error signature and
// returns it; 0 when the last step has none.
func errorRun(steps []StepSummary) (int, string) {
	if len(steps) == 0 {
		return 0, ""
	}
	sig := stepError(steps[len(steps)-1])
	if sig == "" {
		return 0, ""
	}
	n := 0
	for i := len(steps) - 1; i >= 0 && stepError(steps[i]) == sig; i-- {
		n++
	}
	return n, sig
}

// loopRun finds the shortest cycle of two or more distinct URLs that the
// trailing steps repeat at least twice over, and returns how many trailing
// steps follow it and the cycle's pages; 0 when there is none.
func loopRun(steps []StepSummary) (int, []string) {
	urls := make([]string, len(steps))
	for i, s := range steps {
		urls[i] = s.URL
	}
	for p := 2; p <= maxLoopPeriod; p++ {
		n := len(urls)
		if n < 2*p {
			break
		}
		run := p
		for i := n - 1; i-p >= 0 && urls[i] == urls[i-p] && urls[i] != ""; i-- {
			run++
		}
		cycle := urls[n-p:]
		if run >= 2*p && distinct(cycle) >= 2 {
			return run, cycle
		}
	}
	return 0, nil
}

func distinct(ss []string) int {
	seen := make(map[string]bool, len(ss))
	for _, s := range ss {
		seen[s] = true
	}
	return len(seen)
}

// renderAction renders a as "tool args".
func renderAction(a Action) string {
	if a.Args == "" {
		return a.Tool
	}
	return a.Tool + " " + a.Args
}
