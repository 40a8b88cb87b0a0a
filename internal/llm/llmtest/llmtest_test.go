package llmtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
)

func post(t *testing.T, ctx context.Context, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func TestReplies(t *testing.T) {
	t.Parallel()
	s := llmtest.Replies(llmtest.Reply{Text: "one"}, llmtest.Reply{Text: "two"})
	require.Equal(t, "one", s(llmtest.Call{}).Text)
	require.Equal(t, "two", s(llmtest.Call{}).Text)
	require.Equal(t, "two", s(llmtest.Call{}).Text, "the last reply repeats")
	require.Equal(t, "ok", llmtest.Replies()(llmtest.Call{}).Text)
}

// Clients other than the SDKs send the short forms: a string system prompt
// and string contents.
func TestAnthropicShortForms(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t, llmtest.Replies(llmtest.Reply{Text: "hi", Usage: llm.Usage{InputTokens: 10, OutputTokens: 2, CachedInputTokens: 4}}))
	resp, body := post(t, context.Background(), srv.URL+"/v1/messages",
		`{"model":"m","max_tokens":10,"system":"be brief","messages":[{"role":"user","content":"hello"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"input_tokens":6,"output_tokens":2,"cache_read_input_tokens":4,"cache_creation_input_tokens":0,"service_tier":"standard"}`,
		field(t, body, "usage"))
	c := srv.Calls()[0]
	require.Equal(t, "be brief", c.System)
	require.Equal(t, []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Text: "hello"}}}}, c.Messages)
}

func TestErrorReplies(t *testing.T) {
	t.Parallel()
	reply := llmtest.Reply{Status: http.StatusTooManyRequests, RetryAfter: 1500 * time.Millisecond, Text: "slow down"}
	tests := []struct {
		name, path, body string
		srv              func(testing.TB, llmtest.Script) *llmtest.Server
		want             string
	}{
		{name: "anthropic", srv: llmtest.NewAnthropic, path: "/v1/messages",
			body: `{"model":"m","max_tokens":1,"messages":[]}`,
			want: `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`},
		{name: "openai", srv: llmtest.NewOpenAI, path: "/chat/completions",
			body: `{"model":"m","messages":[]}`,
			want: `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{name: "gemini", srv: llmtest.NewGemini, path: "/v1beta/models/m:generateContent",
			body: `{"contents":[]}`,
			want: `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := tt.srv(t, llmtest.Replies(reply))
			resp, body := post(t, context.Background(), srv.URL+tt.path, tt.body)
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			require.Equal(t, "2", resp.Header.Get("Retry-After"), "whole seconds, rounded up")
			require.JSONEq(t, tt.want, string(body))
			require.Len(t, srv.Calls(), 1)
		})
	}
}

func field(t *testing.T, body []byte, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	return string(m[key])
}
