package promptrunner_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/promptrunner"
)

const secret = "s3cret-token-value"

// received is one request the test webhook got.
type received struct {
	method string
	path   string
	query  string
	header http.Header
	body   []byte
}

type testBundle struct {
	server *httptest.Server
	mu     sync.Mutex
	got    []received
	// reply answers each request; the default answers {"text":"ok"}.
	reply http.HandlerFunc
}

func (b *testBundle) received() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.got...)
}

// setup starts a webhook server and a model pointed at it. reply answers
// the requests (nil: {"text":"ok"}); s fills the rest of the settings.
func setup(t *testing.T, reply http.HandlerFunc, s llm.Settings) (llm.Model, *testBundle) {
	t.Helper()
	b := &testBundle{reply: reply}
	if b.reply == nil {
		b.reply = func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"text":"ok"}`) }
	}
	b.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.got = append(b.got, received{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
		b.mu.Unlock()
		b.reply(w, r)
	}))
	t.Cleanup(b.server.Close)
	if s.URL == "" {
		s.URL = b.server.URL + "/hooks/" + secret + "?sig=" + secret
	}
	if s.Headers == nil {
		s.Headers = map[string]string{"Authorization": "Bearer " + secret, "X-Tenant": "acme"}
	}
	m, err := promptrunner.New(s)
	require.NoError(t, err)
	return m, b
}

func TestContractRoundTrip(t *testing.T) {
	t.Parallel()
	answer := `{
		"version": 1,
		"text": "Clicking Reports.",
		"tool_calls": [
			{"id": "tc_1", "name": "click", "arguments": {"ref": "@e7"}},
			{"name": "type", "arguments": "{\"ref\":\"@e2\",\"text\":\"hi\"}"},
			{"id": "tc_3", "name": "done"}
		],
		"usage": {"input_tokens": 1200, "output_tokens": 34, "cached_input_tokens": 1000},
		"model": "host-model-7",
		"stop_reason": "tool_use",
		"something_new": {"ignored": true}
	}`
	temp := 0.3
	m, b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}, llm.Settings{Model: "gpt-4o", Temperature: &temp, MaxOutputTokens: 999})

	req := &llm.Request{
		System: "You drive a browser.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Text: "Open Reports."},
				{Image: &llm.Image{MediaType: "image/png", Data: []byte("\x89PNG\r\n"), Ref: "media-1"}},
			}},
			{Role: llm.RoleAssistant, Parts: []llm.Part{
				{Text: ""},
				{ToolCall: &llm.ToolCall{ID: "c1", Name: "click", Arguments: json.RawMessage(`{"ref":"@e3"}`)}},
				{ToolCall: &llm.ToolCall{ID: "c2", Name: "snapshot"}},
			}},
			{Role: llm.RoleUser, Parts: []llm.Part{
				{ToolResult: &llm.ToolResult{CallID: "c1", Name: "click", Content: `{"error":"element_obscured"}`, IsError: true,
					Images: []llm.Image{{MediaType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}}}}},
				{ToolResult: &llm.ToolResult{CallID: "c2", Name: "snapshot", Content: "ok"}},
			}},
		},
		Tools: []llm.Tool{
			{Name: "click", Description: "Click an element.", InputSchema: json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string"}},"required":["ref"]}`)},
		},
		ToolChoice:  "any",
		Observation: &llm.Observation{Goal: "never sent"},
	}
	ctx := promptrunner.WithCall(context.Background(), "run-42", "controller", 3)

	resp, err := m.Complete(ctx, req)
	require.NoError(t, err)

	got := b.received()
	require.Len(t, got, 1)
	require.JSONEq(t, `{
		"version": 1,
		"run_id": "run-42",
		"role": "controller",
		"step": 3,
		"model": "gpt-4o",
		"system": "You drive a browser.",
		"messages": [
			{"role": "user", "parts": [
				{"text": "Open Reports."},
				{"image": {"media_type": "image/png", "data": "iVBORw0K"}}
			]},
			{"role": "assistant", "parts": [
				{"text": ""},
				{"tool_call": {"id": "c1", "name": "click", "arguments": {"ref": "@e3"}}},
				{"tool_call": {"id": "c2", "name": "snapshot", "arguments": {}}}
			]},
			{"role": "user", "parts": [
				{"tool_result": {"call_id": "c1", "name": "click", "content": "{\"error\":\"element_obscured\"}", "is_error": true,
					"images": [{"media_type": "image/jpeg", "data": "/9j/"}]}},
				{"tool_result": {"call_id": "c2", "name": "snapshot", "content": "ok", "is_error": false}}
			]}
		],
		"tools": [{"name": "click", "description": "Click an element.",
			"input_schema": {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]}}],
		"tool_choice": "any",
		"temperature": 0.3,
		"max_output_tokens": 999
	}`, string(got[0].body))

	require.Equal(t, "Clicking Reports.", resp.Text)
	require.Equal(t, "tool_use", resp.StopReason)
	require.Equal(t, "host-model-7", resp.Model)
	require.Equal(t, llm.Usage{InputTokens: 1200, OutputTokens: 34, CachedInputTokens: 1000}, resp.Usage)
	require.Len(t, resp.ToolCalls, 3)
	require.Equal(t, "tc_1", resp.ToolCalls[0].ID)
	require.Equal(t, "click", resp.ToolCalls[0].Name)
	require.JSONEq(t, `{"ref":"@e7"}`, string(resp.ToolCalls[0].Arguments))
	require.NotEmpty(t, resp.ToolCalls[1].ID, "a missing id is generated")
	require.Equal(t, "type", resp.ToolCalls[1].Name)
	require.JSONEq(t, `{"ref":"@e2","text":"hi"}`, string(resp.ToolCalls[1].Arguments), "arguments as a JSON string")
	require.JSONEq(t, `{}`, string(resp.ToolCalls[2].Arguments), "missing arguments are {}")
}

func TestRequestDefaults(t *testing.T) {
	t.Parallel()
	m, b := setup(t, nil, llm.Settings{})
	temp := 0.0

	resp, err := m.Complete(context.Background(), &llm.Request{
		Messages:    []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Text: "hi"}}}},
		Temperature: &temp,
	})
	require.NoError(t, err)
	require.Equal(t, "ok", resp.Text)
	require.Equal(t, "end_turn", resp.StopReason, "derived when the host does not say")
	require.Zero(t, resp.Usage)

	require.JSONEq(t, `{
		"version": 1, "run_id": "", "role": "", "step": 0, "model": "", "system": "",
		"messages": [{"role": "user", "parts": [{"text": "hi"}]}],
		"tools": [], "tool_choice": "auto", "temperature": 0
	}`, string(b.received()[0].body))
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	m, b := setup(t, nil, llm.Settings{})

	_, err := m.Complete(context.Background(), &llm.Request{})
	require.NoError(t, err)

	got := b.received()[0]
	require.Equal(t, http.MethodPost, got.method)
	require.Equal(t, "/hooks/"+secret, got.path)
	require.Equal(t, "sig="+secret, got.query)
	require.Equal(t, "application/json", got.header.Get("Content-Type"))
	require.Equal(t, "wayfinder", got.header.Get("User-Agent"))
	require.Equal(t, "Bearer "+secret, got.header.Get("Authorization"))
	require.Equal(t, "acme", got.header.Get("X-Tenant"))

	t.Run("Content-Type cannot be overridden", func(t *testing.T) {
		t.Parallel()
		m, b := setup(t, nil, llm.Settings{Headers: map[string]string{"content-type": "text/plain", "User-Agent": "host-agent/2"}})
		_, err := m.Complete(context.Background(), &llm.Request{})
		require.NoError(t, err)
		got := b.received()[0]
		require.Equal(t, []string{"application/json"}, got.header.Values("Content-Type"))
		require.Equal(t, "host-agent/2", got.header.Get("User-Agent"))
	})
}

func TestErrorClasses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		class      error
		retryAfter time.Duration
		contains   string
	}{
		{name: "401", status: 401, body: `{"error":"bad header Bearer ` + secret + `"}`, class: llm.ErrAuth, contains: "bad header [redacted]"},
		{name: "401 echoing the bare token", status: 401, body: `bad token ` + secret, class: llm.ErrAuth, contains: "bad token [redacted]"},
		{name: "403", status: 403, class: llm.ErrAuth, contains: "Forbidden"},
		{name: "429 with seconds", status: 429, header: map[string]string{"Retry-After": "7"}, class: llm.ErrRateLimited, retryAfter: 7 * time.Second},
		{name: "429 without Retry-After", status: 429, class: llm.ErrRateLimited},
		{name: "503 with Retry-After", status: 503, header: map[string]string{"Retry-After": "2"}, class: llm.ErrTransient, retryAfter: 2 * time.Second},
		{name: "500", status: 500, body: "upstream model crashed\n\n  trace…", class: llm.ErrTransient, contains: "Internal Server Error: upstream model crashed trace…"},
		{name: "408", status: 408, class: llm.ErrTransient},
		{name: "400", status: 400, body: `{"error":"unknown tool"}`, class: llm.ErrInvalidRequest, contains: "unknown tool"},
		{name: "404", status: 404, class: llm.ErrInvalidRequest, contains: "Not Found"},
		{name: "422", status: 422, class: llm.ErrInvalidRequest},
		{name: "long body is cut", status: 400, body: strings.Repeat("x", 10_000), class: llm.ErrInvalidRequest, contains: strings.Repeat("x", 200) + "…"},
		{name: "not JSON", status: 200, body: "<html>hello</html>", class: llm.ErrUnparseable, contains: "not the prompt-runner JSON"},
		{name: "wrong type", status: 200, body: `{"text": 3}`, class: llm.ErrUnparseable},
		{name: "empty body", status: 200, class: llm.ErrUnparseable},
		{name: "other version", status: 200, body: `{"version": 2, "text": "hi"}`, class: llm.ErrUnparseable, contains: "version 2"},
		{name: "tool call without name", status: 200, body: `{"tool_calls": [{"id": "x", "arguments": {}}]}`, class: llm.ErrUnparseable, contains: "no name"},
		{name: "arguments not an object", status: 200, body: `{"tool_calls": [{"name": "click", "arguments": [1]}]}`, class: llm.ErrUnparseable, contains: "not a JSON object"},
		{name: "arguments string not an object", status: 200, body: `{"tool_calls": [{"name": "click", "arguments": "ref=@e1"}]}`, class: llm.ErrUnparseable, contains: "not a JSON object"},
		{name: "negative usage", status: 200, body: `{"text": "hi", "usage": {"input_tokens": -1}}`, class: llm.ErrUnparseable},
		{name: "too large", status: 200, body: `{"text": "` + strings.Repeat("a", 8<<20) + `"}`, class: llm.ErrUnparseable, contains: "larger than 8 MiB"},
		{name: "empty answer", status: 200, body: `{"text": "", "usage": {"input_tokens": 5}}`, class: llm.ErrRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, _ := setup(t, func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}, llm.Settings{})

			resp, err := m.Complete(context.Background(), &llm.Request{})

			require.Nil(t, resp)
			require.ErrorIs(t, err, tt.class)
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, llm.ProviderPromptRunner, e.Provider)
			require.Equal(t, tt.status, e.Status)
			require.Equal(t, tt.retryAfter, e.RetryAfter)
			require.ErrorContains(t, err, tt.contains)
			require.NotContains(t, err.Error(), secret)
		})
	}
}

func TestRetryAfterDate(t *testing.T) {
	t.Parallel()
	m, _ := setup(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusTooManyRequests)
	}, llm.Settings{})
	_, err := m.Complete(context.Background(), &llm.Request{})
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Greater(t, e.RetryAfter, 50*time.Minute)
}

func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	m, b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			_, _ = io.WriteString(w, `{"text":"followed"}`)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}, llm.Settings{})

	_, err := m.Complete(context.Background(), &llm.Request{})

	require.ErrorIs(t, err, llm.ErrInvalidRequest)
	require.ErrorContains(t, err, "redirects are not followed")
	require.Len(t, b.received(), 1, "the run's headers went nowhere else")
}

func TestNetworkErrors(t *testing.T) {
	t.Parallel()

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL + "/hooks/" + secret
		srv.Close()
		m, err := promptrunner.New(llm.Settings{URL: url, Headers: map[string]string{"Authorization": secret}})
		require.NoError(t, err)

		_, err = m.Complete(context.Background(), &llm.Request{})

		require.ErrorIs(t, err, llm.ErrTransient)
		require.NotContains(t, err.Error(), secret)
	})

	t.Run("attempt timeout", func(t *testing.T) {
		t.Parallel()
		m, _ := setup(t, func(_ http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, llm.Settings{Timeout: 20 * time.Millisecond})

		_, err := m.Complete(context.Background(), &llm.Request{})

		require.ErrorIs(t, err, llm.ErrTransient)
		require.ErrorContains(t, err, "timed out")
		require.NotErrorIs(t, err, context.DeadlineExceeded)
		require.NotContains(t, err.Error(), secret)
	})

	t.Run("caller's HTTP client", func(t *testing.T) {
		t.Parallel()
		m, b := setup(t, nil, llm.Settings{HTTPClient: &http.Client{}})
		_, err := m.Complete(context.Background(), &llm.Request{})
		require.NoError(t, err)
		require.Len(t, b.received(), 1)
	})
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	m, _ := setup(t, func(_ http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}, llm.Settings{Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(ctx, &llm.Request{})
		done <- err
	}()
	<-entered
	cancel()
	require.Equal(t, context.Canceled, <-done)

	t.Run("already done", func(t *testing.T) {
		m, b := setup(t, nil, llm.Settings{})
		_, err := m.Complete(ctx, &llm.Request{})
		require.Equal(t, context.Canceled, err)
		require.Empty(t, b.received())
	})
}

func TestInvalidRequest(t *testing.T) {
	t.Parallel()
	m, b := setup(t, nil, llm.Settings{})
	tests := map[string]*llm.Request{
		"tool choice": {ToolChoice: "required"},
		"tool schema": {Tools: []llm.Tool{{Name: "x", InputSchema: json.RawMessage(`{`)}}},
		"arguments": {Messages: []llm.Message{{Role: llm.RoleAssistant, Parts: []llm.Part{
			{ToolCall: &llm.ToolCall{ID: "1", Name: "x", Arguments: json.RawMessage(`{"a":`)}},
		}}}},
	}
	for name, req := range tests {
		_, err := m.Complete(context.Background(), req)
		require.ErrorIs(t, err, llm.ErrInvalidRequest, name)
	}
	require.Empty(t, b.received(), "nothing sent")
}

func TestNew(t *testing.T) {
	t.Parallel()
	m, err := promptrunner.New(llm.Settings{URL: "https://host.example/run", Model: "gpt-4o"})
	require.NoError(t, err)
	require.Equal(t, llm.ProviderPromptRunner, m.Provider())
	require.Equal(t, "gpt-4o", m.Name())

	m, err = promptrunner.New(llm.Settings{URL: "http://host.example/run"})
	require.NoError(t, err)
	require.Equal(t, "webhook", m.Name())

	bad := []struct {
		name string
		s    llm.Settings
		want string
	}{
		{"no URL", llm.Settings{}, "absolute http or https URL"},
		{"relative URL", llm.Settings{URL: "/run"}, "absolute http or https URL"},
		{"other scheme", llm.Settings{URL: "file:///etc/passwd"}, "absolute http or https URL"},
		{"bad header name", llm.Settings{URL: "https://h/run", Headers: map[string]string{"Bad Name": "v"}}, `invalid header name "Bad Name"`},
		{"bad header value", llm.Settings{URL: "https://h/run", Headers: map[string]string{"X-Key": secret + "\r\nX-Evil: 1"}}, `header "X-Key": invalid value`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := promptrunner.New(tt.s)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), secret)
		})
	}
}
