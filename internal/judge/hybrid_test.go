package judge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

func TestHybrid(t *testing.T) {
	t.Parallel()
	done := llm.Reply("", verdictCall(map[string]any{"done": true, "failed": false, "confidence": 0.9, "reason": "confirmation shown"}))
	notDone := llm.Reply("", verdictCall(map[string]any{"done": false, "failed": false, "confidence": 0.6, "reason": "not yet", "feedback": "Open the plan list."}))
	progress := steps(3, each("https://a/"), each("h"), clickOK)
	tests := []struct {
		name       string
		steps      []StepSummary
		claim      *Claim
		turns      []llm.Turn
		noLLM      bool
		wantCalls  int
		wantSource string
		wantDone   bool
		wantFailed bool
		feedback   []string
	}{
		{name: "inconclusive heuristics ask the model", steps: progress, turns: []llm.Turn{done},
			wantCalls: 1, wantSource: SourceLLM, wantDone: true},
		{name: "early sign: model asked, feedback merged", steps: steps(3, same("https://a/"), same("h"), clickOK), turns: []llm.Turn{notDone},
			wantCalls: 1, wantSource: SourceLLM, feedback: []string{"Open the plan list.", "The page has not changed for 3 steps"}},
		{name: "stuck for good: no model call", steps: steps(8, same("https://a/"), same("h"), clickOK),
			wantCalls: 0, wantSource: SourceHeuristic, wantFailed: true},
		{name: "failed claim: no model call", steps: progress, claim: &Claim{Status: ClaimFailed, Reason: "no account"},
			wantCalls: 0, wantSource: SourceHeuristic, wantFailed: true},
		{name: "contradicted success claim: no model call", steps: append(progress, step(4, "https://b/", "b", clickFail, claimAct)),
			claim: &Claim{Status: ClaimSuccess}, wantCalls: 0, wantSource: SourceHeuristic, feedback: []string{"not accepted"}},
		{name: "plausible success claim: the model verifies", steps: append(progress, step(4, "https://b/", "b", clickOK, claimAct)),
			claim: &Claim{Status: ClaimSuccess}, turns: []llm.Turn{notDone}, wantCalls: 1, wantSource: SourceLLM,
			feedback: []string{"Open the plan list."}},
		{name: "no LLM behaves as Heuristic", steps: append(progress, step(4, "https://b/", "b", clickOK, claimAct)),
			claim: &Claim{Status: ClaimSuccess}, noLLM: true, wantSource: SourceHeuristic, wantDone: true},
		{name: "no LLM, nothing found", steps: progress, noLLM: true, wantSource: SourceHeuristic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := llm.NewScripted("judge-model", tt.turns...)
			h := &Hybrid{}
			if !tt.noLLM {
				h.LLM = NewLLM(m, "", LLMOptions{})
			}
			v, err := h.Evaluate(context.Background(), &Context{Goal: "g", Steps: tt.steps, Claim: tt.claim})
			require.NoError(t, err)
			require.Len(t, m.Requests(), tt.wantCalls)
			require.Equal(t, tt.wantSource, v.Source)
			require.Equal(t, tt.wantDone, v.Done)
			require.Equal(t, tt.wantFailed, v.Failed)
			for _, f := range tt.feedback {
				require.Contains(t, v.Feedback, f)
			}
		})
	}
}

func TestHybridOptions(t *testing.T) {
	t.Parallel()
	t.Run("heuristic settings apply", func(t *testing.T) {
		t.Parallel()
		m := llm.NewScripted("judge-model")
		h := &Hybrid{Heuristic: &Heuristic{FailAfter: 3}, LLM: NewLLM(m, "", LLMOptions{})}
		v, err := h.Evaluate(context.Background(), &Context{Goal: "g", Steps: steps(3, same("https://a/"), same("h"))})
		require.NoError(t, err)
		require.True(t, v.Failed)
		require.Empty(t, m.Requests())
	})
	t.Run("model errors are returned", func(t *testing.T) {
		t.Parallel()
		m := llm.NewScripted("judge-model", fail(&llm.Error{Class: llm.ErrRateLimited, Provider: "scripted", Message: "429"}))
		h := &Hybrid{LLM: NewLLM(m, "", LLMOptions{})}
		_, err := h.Evaluate(context.Background(), &Context{Goal: "g"})
		require.ErrorIs(t, err, llm.ErrRateLimited)
	})
	t.Run("heuristic errors are returned", func(t *testing.T) {
		t.Parallel()
		_, err := (&Hybrid{}).Evaluate(context.Background(), nil)
		require.Error(t, err)
	})
}
