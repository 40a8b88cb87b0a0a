package judge

import (
	"context"
	"strings"
)

// Hybrid is the default judge: the heuristics first (free), the model only
// when they are not conclusive. When the model is asked and does not find
// the goal met, the heuristics' feedback is added to the model's.
type Hybrid struct {
	// Heuristic runs first; nil means a Heuristic with defaults.
	Heuristic *Heuristic
	// LLM is asked when the heuristics are not conclusive; nil makes
	// Hybrid behave as Heuristic.
	LLM *LLM
}

var _ Judge = (*Hybrid)(nil)

// Evaluate returns the heuristics' verdict when it is conclusive (the run
// is stuck for good, a "failed" claim, a contradicted "success" claim) or
// when there is no LLM, else the model's. Errors are the LLM's.
func (h *Hybrid) Evaluate(ctx context.Context, c *Context) (Verdict, error) {
	hv, err := h.Heuristic.Evaluate(ctx, c)
	if err != nil || hv.Conclusive || h.LLM == nil {
		return hv, err
	}
	v, err := h.LLM.Evaluate(ctx, c)
	if err != nil {
		return Verdict{}, err
	}
	if !v.Done && !v.Failed && hv.Feedback != "" {
		v.Feedback = strings.TrimSpace(v.Feedback + " " + hv.Feedback)
		if v.SuggestedNextAction == "" {
			v.SuggestedNextAction = hv.SuggestedNextAction
		}
	}
	return v, nil
}
