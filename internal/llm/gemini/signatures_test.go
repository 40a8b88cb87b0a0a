package gemini

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/wayfinder/wayfinder/internal/llm"
)

func TestSignaturesForgetTheOldest(t *testing.T) {
	t.Parallel()
	s := newSignatures(2)
	s.put("a", []byte("1"))
	s.put("b", []byte("2"))
	s.put("a", []byte("1'"))
	require.Equal(t, []byte("1'"), s.get("a"))
	s.put("c", []byte("3"))
	require.Nil(t, s.get("a"), "the oldest is forgotten")
	require.Equal(t, []byte("2"), s.get("b"))
	require.Equal(t, []byte("3"), s.get("c"))
}

// A signed call goes back with its own signature; in a turn of parallel
// calls only the first one needs one.
func TestSignaturesTravelBack(t *testing.T) {
	t.Parallel()
	m := &model{name: DefaultModel, signatures: newSignatures(maxSignatures)}
	resp, err := m.response(&genai.GenerateContentResponse{Candidates: []*genai.Candidate{{
		FinishReason: genai.FinishReasonStop,
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{Text: "thinking…", Thought: true},
			{FunctionCall: &genai.FunctionCall{Name: "click", Args: map[string]any{"ref": "@e1"}}, ThoughtSignature: []byte("sig-1")},
			{FunctionCall: &genai.FunctionCall{Name: "click", Args: map[string]any{"ref": "@e2"}}},
		}},
	}}})
	require.NoError(t, err)
	require.Empty(t, resp.Text, "thoughts are not the answer")
	require.Len(t, resp.ToolCalls, 2)

	parts := []llm.Part{{ToolCall: &resp.ToolCalls[0]}, {ToolCall: &resp.ToolCalls[1]}}
	contents, _, err := m.request(&llm.Request{Messages: []llm.Message{{Role: llm.RoleAssistant, Parts: parts}}})
	require.NoError(t, err)
	got := contents[0].Parts
	require.Equal(t, []byte("sig-1"), got[0].ThoughtSignature)
	require.Nil(t, got[1].ThoughtSignature)
	require.Empty(t, got[0].FunctionCall.ID, "generated IDs stay here")
	args, _ := json.Marshal(got[1].FunctionCall.Args)
	require.JSONEq(t, `{"ref":"@e2"}`, string(args))
}

func TestSignaturesConcurrent(t *testing.T) {
	t.Parallel()
	s := newSignatures(16)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 100 {
				id := fmt.Sprint(g, i)
				s.put(id, []byte(id))
				_ = s.get(id)
			}
		}()
	}
	for range 4 {
		<-done
	}
	require.LessOrEqual(t, len(s.byID), 16)
}
