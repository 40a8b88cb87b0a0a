package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

func TestScriptedAnswersInOrder(t *testing.T) {
	t.Parallel()
	click := llm.Call("click", map[string]string{"ref": "@e3"})
	boom := errors.New("boom")
	var seen *llm.Request
	m := llm.NewScripted("script-1",
		llm.Reply("I will click Reports.", click),
		func(req *llm.Request) (*llm.Response, error) {
			seen = req
			return nil, fmt.Errorf("turn 2: %w", boom)
		},
		llm.Reply("done"),
	)
	require.Equal(t, llm.ProviderScripted, m.Provider())
	require.Equal(t, "script-1", m.Name())
	ctx := context.Background()

	req := &llm.Request{System: "be brief", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Text: "open reports"}}}}}
	resp, err := m.Complete(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "I will click Reports.", resp.Text)
	require.Equal(t, "tool_use", resp.StopReason)
	require.Equal(t, []llm.ToolCall{click}, resp.ToolCalls)
	require.Positive(t, resp.Usage.InputTokens)
	require.Positive(t, resp.Usage.OutputTokens)

	_, err = m.Complete(ctx, &llm.Request{System: "second"})
	require.ErrorIs(t, err, boom)
	require.Equal(t, "second", seen.System)

	resp, err = m.Complete(ctx, &llm.Request{System: "third"})
	require.NoError(t, err)
	require.Equal(t, "done", resp.Text)
	require.Equal(t, "end_turn", resp.StopReason)
	require.Empty(t, resp.ToolCalls)

	_, err = m.Complete(ctx, &llm.Request{System: "fourth"})
	require.ErrorIs(t, err, llm.ErrInvalidRequest)
	require.ErrorContains(t, err, "script exhausted")
	require.False(t, llm.Retryable(err))

	reqs := m.Requests()
	require.Len(t, reqs, 4)
	for i, want := range []string{"be brief", "second", "third", "fourth"} {
		require.Equal(t, want, reqs[i].System)
	}
}

func TestScriptedRequestsAreCopies(t *testing.T) {
	t.Parallel()
	temp := 0.2
	req := &llm.Request{
		System:      "sys",
		Temperature: &temp,
		Tools:       []llm.Tool{{Name: "click", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Text: "look"},
				{Image: &llm.Image{MediaType: "image/png", Data: []byte{1, 2, 3}}},
			}},
			{Role: llm.RoleAssistant, Parts: []llm.Part{{ToolCall: &llm.ToolCall{ID: "c1", Name: "click", Arguments: json.RawMessage(`{"ref":"@e1"}`)}}}},
			{Role: llm.RoleUser, Parts: []llm.Part{{ToolResult: &llm.ToolResult{CallID: "c1", Name: "click", Content: "ok",
				Images: []llm.Image{{MediaType: "image/jpeg", Data: []byte{4, 5}}}}}}},
		},
		Observation: &llm.Observation{Goal: "g", Elements: []llm.ObservedElement{{Ref: "@e1", State: []string{"checked"}}}},
	}
	var turnReq *llm.Request
	m := llm.NewScripted("s", func(r *llm.Request) (*llm.Response, error) {
		turnReq = r
		r.Messages[0].Parts[0].Text = "changed by the turn"
		return &llm.Response{Text: "ok"}, nil
	})
	_, err := m.Complete(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "look", req.Messages[0].Parts[0].Text, "the turn works on a copy")
	require.Equal(t, "changed by the turn", turnReq.Messages[0].Parts[0].Text)

	// The caller reuses and changes its request (as a runner appending to
	// its conversation does).
	temp = 0.9
	req.Messages[0].Parts[0].Text = "changed"
	req.Messages[0].Parts[1].Image.Data[0] = 9
	req.Messages[1].Parts[0].ToolCall.Arguments[2] = 'X'
	req.Messages[2].Parts[0].ToolResult.Images[0].Data[0] = 9
	req.Messages[2].Parts[0].ToolResult.Content = "changed"
	req.Tools[0].InputSchema[2] = 'X'
	req.Observation.Elements[0].State[0] = "changed"
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser})

	got := m.Requests()[0]
	require.Equal(t, 0.2, *got.Temperature)
	require.Len(t, got.Messages, 3)
	require.Equal(t, "look", got.Messages[0].Parts[0].Text)
	require.Equal(t, []byte{1, 2, 3}, got.Messages[0].Parts[1].Image.Data)
	require.JSONEq(t, `{"ref":"@e1"}`, string(got.Messages[1].Parts[0].ToolCall.Arguments))
	require.Equal(t, []byte{4, 5}, got.Messages[2].Parts[0].ToolResult.Images[0].Data)
	require.Equal(t, "ok", got.Messages[2].Parts[0].ToolResult.Content)
	require.JSONEq(t, `{"type":"object"}`, string(got.Tools[0].InputSchema))
	require.Equal(t, []string{"checked"}, got.Observation.Elements[0].State)

	// And a caller of Requests cannot change the record either.
	got.Messages[0].Parts[0].Text = "mine"
	require.Equal(t, "look", m.Requests()[0].Messages[0].Parts[0].Text)
}

func TestScriptedHonoursContext(t *testing.T) {
	t.Parallel()
	m := llm.NewScripted("s", llm.Reply("never"), llm.Reply("second"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Complete(ctx, &llm.Request{})
	require.Equal(t, context.Canceled, err)
	require.Empty(t, m.Requests(), "a cancelled call uses no turn")

	resp, err := m.Complete(context.Background(), &llm.Request{})
	require.NoError(t, err)
	require.Equal(t, "never", resp.Text)
}

func TestScriptedConcurrent(t *testing.T) {
	t.Parallel()
	const n = 20
	turns := make([]llm.Turn, n)
	for i := range turns {
		turns[i] = llm.Reply(fmt.Sprint(i))
	}
	m := llm.NewScripted("s", turns...)
	var wg sync.WaitGroup
	answers := make(chan string, n)
	for range n {
		wg.Go(func() {
			resp, err := m.Complete(context.Background(), &llm.Request{})
			if err == nil {
				answers <- resp.Text
			}
			_ = m.Requests()
		})
	}
	wg.Wait()
	close(answers)
	seen := map[string]bool{}
	for a := range answers {
		seen[a] = true
	}
	require.Len(t, seen, n, "every turn used exactly once")
	require.Len(t, m.Requests(), n)
}

func TestCall(t *testing.T) {
	t.Parallel()
	a := llm.Call("type", struct {
		Ref  string `json:"ref"`
		Text string `json:"text"`
	}{"@e2", "hello"})
	require.Equal(t, "type", a.Name)
	require.JSONEq(t, `{"ref":"@e2","text":"hello"}`, string(a.Arguments))
	require.NotEmpty(t, a.ID)

	b := llm.Call("done", nil)
	require.JSONEq(t, `{}`, string(b.Arguments))
	require.NotEqual(t, a.ID, b.ID)

	raw := llm.Call("done", json.RawMessage(`{"success":true}`))
	require.JSONEq(t, `{"success":true}`, string(raw.Arguments))

	require.Panics(t, func() { llm.Call("bad", make(chan int)) })
}
