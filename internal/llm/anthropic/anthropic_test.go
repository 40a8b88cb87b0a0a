package anthropic_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/anthropic"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
)

const testKey = "sk-ant-test-0123456789abcdef"

func newModel(t *testing.T, srv *llmtest.Server, edit func(*llm.Settings)) llm.Model {
	t.Helper()
	s := llm.Settings{Provider: llm.ProviderAnthropic, BaseURL: srv.URL, APIKey: testKey}
	if edit != nil {
		edit(&s)
	}
	m, err := anthropic.New(s)
	require.NoError(t, err)
	return m
}

func userText(text string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{{Text: text}}}
}

func TestTextAnswer(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t, func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "The total is 42.", Usage: llm.Usage{InputTokens: 120, OutputTokens: 9, CachedInputTokens: 100}}
	})
	m := newModel(t, srv, nil)
	require.Equal(t, llm.ProviderAnthropic, m.Provider())
	require.Equal(t, anthropic.DefaultModel, m.Name())

	resp, err := m.Complete(context.Background(), &llm.Request{
		System:   "You check reports.",
		Messages: []llm.Message{userText("What is the total?")},
	})
	require.NoError(t, err)
	require.Equal(t, "The total is 42.", resp.Text)
	require.Empty(t, resp.ToolCalls)
	require.Equal(t, "end_turn", resp.StopReason)
	require.Equal(t, anthropic.DefaultModel, resp.Model)
	require.Equal(t, llm.Usage{InputTokens: 120, OutputTokens: 9, CachedInputTokens: 100}, resp.Usage)

	calls := srv.Calls()
	require.Len(t, calls, 1)
	c := calls[0]
	require.Equal(t, "/v1/messages", c.Path)
	require.Equal(t, anthropic.DefaultModel, c.Model)
	require.Equal(t, "You check reports.", c.System)
	require.Equal(t, []llm.Message{userText("What is the total?")}, c.Messages)
	require.Equal(t, testKey, c.Header.Get("X-Api-Key"), "the key travels in x-api-key")
	require.Empty(t, c.Header.Get("Authorization"))
	require.NotEmpty(t, c.Header.Get("Anthropic-Version"))
	require.Equal(t, "0", c.Header.Get("X-Stainless-Retry-Count"))
}

func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t, func(c llmtest.Call) llmtest.Reply {
		if len(c.Messages) == 1 {
			return llmtest.Reply{
				Text:      "I will click Reports.",
				ToolCalls: []llm.ToolCall{{Name: "click", Arguments: json.RawMessage(`{"ref":"@e3"}`)}},
			}
		}
		return llmtest.Reply{Text: "Reports is open."}
	})
	m := newModel(t, srv, nil)
	tools := []llm.Tool{{
		Name:        "click",
		Description: "Click an element.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"],"additionalProperties":false}`),
	}}
	req := &llm.Request{
		System:     "Drive the browser.",
		Messages:   []llm.Message{userText("Open Reports.")},
		Tools:      tools,
		ToolChoice: "any",
	}
	resp, err := m.Complete(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "tool_use", resp.StopReason)
	require.Equal(t, "I will click Reports.", resp.Text)
	require.Len(t, resp.ToolCalls, 1)
	tc := resp.ToolCalls[0]
	require.NotEmpty(t, tc.ID)
	require.Equal(t, "click", tc.Name)
	require.JSONEq(t, `{"ref":"@e3"}`, string(tc.Arguments))

	first := srv.Calls()[0]
	require.Equal(t, []string{"click"}, first.Tools)
	require.Equal(t, "any", first.ToolChoice)
	var body struct {
		Tools []struct {
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(first.Body, &body))
	require.Equal(t, "Click an element.", body.Tools[0].Description)
	require.JSONEq(t, string(tools[0].InputSchema), string(body.Tools[0].InputSchema))

	png := llmtest.PNG()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Text: resp.Text}, {ToolCall: &tc}}},
		llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			{Text: "Continue."},
			{ToolResult: &llm.ToolResult{CallID: tc.ID, Name: tc.Name, Content: `{"ok":true}`,
				Images: []llm.Image{{MediaType: "image/png", Data: png}}}},
		}},
	)
	req.ToolChoice = ""
	resp, err = m.Complete(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "Reports is open.", resp.Text)

	calls := srv.Calls()
	require.Len(t, calls, 2)
	second := calls[1]
	require.Equal(t, "", second.ToolChoice)
	require.Equal(t, 1, second.ImageCount)
	require.Len(t, second.Messages, 3)
	require.Equal(t, llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
		{Text: "I will click Reports."},
		{ToolCall: &llm.ToolCall{ID: tc.ID, Name: "click", Arguments: json.RawMessage(`{"ref":"@e3"}`)}},
	}}, second.Messages[1])
	result := second.Messages[2]
	require.Equal(t, llm.RoleUser, result.Role)
	require.Len(t, result.Parts, 2)
	require.NotNil(t, result.Parts[0].ToolResult)
	got := result.Parts[0].ToolResult
	require.Equal(t, tc.ID, got.CallID)
	require.Equal(t, `{"ok":true}`, got.Content)
	require.Equal(t, []llm.Image{{MediaType: "image/png", Data: png}}, got.Images, "the image travels inside the tool_result")
	require.Equal(t, "Continue.", result.Parts[1].Text, "tool results come first")
}

func TestToolResultError(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t, nil)
	m := newModel(t, srv, nil)
	_, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{
		userText("Go."),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{ToolCall: &llm.ToolCall{ID: "toolu_1", Name: "click", Arguments: json.RawMessage(`{}`)}}}},
		{Role: llm.RoleUser, Parts: []llm.Part{{ToolResult: &llm.ToolResult{CallID: "toolu_1", Name: "click", Content: "ref_invalid", IsError: true}}}},
	}})
	require.NoError(t, err)
	got := srv.Calls()[0].Messages[2].Parts[0].ToolResult
	require.True(t, got.IsError)
	require.Equal(t, "ref_invalid", got.Content)
}

func TestSamplingSettings(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name      string
		settings  llm.Settings
		req       llm.Request
		wantTemp  *float64
		wantMax   int
		wantModel string
	}{
		{name: "defaults", wantMax: 4096, wantModel: anthropic.DefaultModel},
		{name: "settings", settings: llm.Settings{Model: "claude-haiku-4-5", Temperature: f(0.3), MaxOutputTokens: 800},
			wantTemp: f(0.3), wantMax: 800, wantModel: "claude-haiku-4-5"},
		{name: "request wins", settings: llm.Settings{Temperature: f(0.3), MaxOutputTokens: 800},
			req: llm.Request{Temperature: f(0), MaxOutputTokens: 50}, wantTemp: f(0), wantMax: 50, wantModel: anthropic.DefaultModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewAnthropic(t, nil)
			m := newModel(t, srv, func(s *llm.Settings) {
				s.Model, s.Temperature, s.MaxOutputTokens = tt.settings.Model, tt.settings.Temperature, tt.settings.MaxOutputTokens
			})
			req := tt.req
			req.Messages = []llm.Message{userText("Hi.")}
			_, err := m.Complete(context.Background(), &req)
			require.NoError(t, err)
			c := srv.Calls()[0]
			require.Equal(t, tt.wantTemp, c.Temperature)
			require.Equal(t, tt.wantMax, c.MaxOutputTokens)
			require.Equal(t, tt.wantModel, c.Model)
			require.Equal(t, tt.wantModel, m.Name())
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		reply      llmtest.Reply
		class      error
		status     int
		retryAfter time.Duration
	}{
		{name: "401", reply: llmtest.Reply{Status: 401, Text: "invalid x-api-key " + testKey}, class: llm.ErrAuth, status: 401},
		{name: "403", reply: llmtest.Reply{Status: 403, Text: "key " + testKey + " may not use this model"}, class: llm.ErrAuth, status: 403},
		{name: "429 with Retry-After", reply: llmtest.Reply{Status: 429, RetryAfter: 7 * time.Second, Text: "slow down"},
			class: llm.ErrRateLimited, status: 429, retryAfter: 7 * time.Second},
		{name: "429 without Retry-After", reply: llmtest.Reply{Status: 429}, class: llm.ErrRateLimited, status: 429},
		{name: "500", reply: llmtest.Reply{Status: 500}, class: llm.ErrTransient, status: 500},
		{name: "529 overloaded", reply: llmtest.Reply{Status: 529, Text: "Overloaded"}, class: llm.ErrTransient, status: 529},
		{name: "408", reply: llmtest.Reply{Status: 408}, class: llm.ErrTransient, status: 408},
		{name: "400", reply: llmtest.Reply{Status: 400, Text: "messages: field required; key " + testKey}, class: llm.ErrInvalidRequest, status: 400},
		{name: "404", reply: llmtest.Reply{Status: 404, Text: "model: no-such-model"}, class: llm.ErrInvalidRequest, status: 404},
		{name: "malformed tool args", reply: llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: "click", Arguments: json.RawMessage(`{"ref": @e1`)}}},
			class: llm.ErrUnparseable},
		{name: "tool args not an object", reply: llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: "click", Arguments: json.RawMessage(`["@e1"]`)}}},
			class: llm.ErrUnparseable},
		{name: "empty answer", reply: llmtest.Reply{}, class: llm.ErrRefused},
		{name: "refusal", reply: llmtest.Reply{Text: "I can't help with that.", StopReason: "refusal"}, class: llm.ErrRefused},
		{name: "connection dropped", reply: llmtest.Reply{Drop: true}, class: llm.ErrTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewAnthropic(t, func(llmtest.Call) llmtest.Reply { return tt.reply })
			m := newModel(t, srv, nil)
			resp, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{userText("Hi.")}})
			require.Nil(t, resp)
			require.ErrorIs(t, err, tt.class)
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, llm.ProviderAnthropic, e.Provider)
			require.Equal(t, tt.status, e.Status)
			require.Equal(t, tt.retryAfter, e.RetryAfter)
			require.NotContains(t, err.Error(), testKey)
			require.NotContains(t, err.Error(), "Hi.", "no request contents in errors")
			require.Len(t, srv.Calls(), 1, "the SDK must not retry on its own")
		})
	}
}

func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t, func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Text: "late", Delay: time.Minute} })
	m := newModel(t, srv, func(s *llm.Settings) { s.Timeout = 100 * time.Millisecond })
	_, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{userText("Hi.")}})
	require.ErrorIs(t, err, llm.ErrTransient)
	require.NotContains(t, err.Error(), testKey)
}

func TestCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	srv := llmtest.NewAnthropic(t, func(llmtest.Call) llmtest.Reply {
		close(started)
		return llmtest.Reply{Text: "late", Delay: time.Hour}
	})
	m := newModel(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := m.Complete(ctx, &llm.Request{Messages: []llm.Message{userText("Hi.")}})
	require.Equal(t, context.Canceled, err, "ctx's error, as is")
}

func TestNew(t *testing.T) {
	t.Parallel()
	_, err := anthropic.New(llm.Settings{})
	require.ErrorIs(t, err, llm.ErrAuth)
	require.ErrorContains(t, err, "API key")
}

func TestBaseURLWithoutKey(t *testing.T) {
	// Not parallel: it sets the environment. A key in the environment must
	// not reach a server the caller named without a key.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := llmtest.NewAnthropic(t, nil)
	m, err := anthropic.New(llm.Settings{BaseURL: srv.URL, Headers: map[string]string{"X-Proxy-Team": "qa"}})
	require.NoError(t, err)
	resp, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{userText("Hi.")}})
	require.NoError(t, err)
	require.Equal(t, "ok", resp.Text)
	h := srv.Calls()[0].Header
	require.Empty(t, h.Get("X-Api-Key"))
	require.Empty(t, h.Get("Authorization"))
	require.Equal(t, "qa", h.Get("X-Proxy-Team"))
}

func TestInvalidRequest(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t, nil)
	m := newModel(t, srv, nil)
	tests := map[string]llm.Request{
		"bad schema":   {Messages: []llm.Message{userText("Hi.")}, Tools: []llm.Tool{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}},
		"bad choice":   {Messages: []llm.Message{userText("Hi.")}, Tools: []llm.Tool{{Name: "x"}}, ToolChoice: "sometimes"},
		"bad role":     {Messages: []llm.Message{{Role: "system", Parts: []llm.Part{{Text: "x"}}}}},
		"call by user": {Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{ToolCall: &llm.ToolCall{Name: "x"}}}}}},
	}
	for name, req := range tests {
		_, err := m.Complete(context.Background(), &req)
		require.ErrorIs(t, err, llm.ErrInvalidRequest, name)
	}
	require.Empty(t, srv.Calls())
}

// The SDK does not retry; llm.WithRetry does, on the classified errors.
func TestRetriedFromOutside(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t, llmtest.Replies(
		llmtest.Reply{Status: 503},
		llmtest.Reply{Status: 429},
		llmtest.Reply{Text: "third time"},
	))
	m := llm.WithRetry(newModel(t, srv, nil), llm.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 3}, nil)
	resp, err := m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{userText("Hi.")}})
	require.NoError(t, err)
	require.Equal(t, "third time", resp.Text)
	require.Len(t, srv.Calls(), 3)
}
