package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/tools"
)

// secret is the header value every test webhook receives; no error may
// show it.
const secret = "tok-9f8e7d6c5b4a3210"

// hook is a test webhook on 127.0.0.1.
type hook struct {
	srv   *httptest.Server
	calls atomic.Int32

	mu     sync.Mutex
	header http.Header
	body   []byte
}

func newHook(t *testing.T, handler http.HandlerFunc) *hook {
	t.Helper()
	h := &hook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.header, h.body = r.Header.Clone(), body
		h.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// received returns the last request's headers and body.
func (h *hook) received() (http.Header, []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.header, h.body
}

// testClient is a client of its own, so idle connections can be closed
// before goleak looks.
func testClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// orderTool is the tool of most tests: an order number in, a status out.
func orderTool(url string) tools.Definition {
	return tools.Definition{
		Name:        "lookup_order",
		Description: "Looks up an order.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string","pattern":"^[0-9]+$"}},"required":["order"],"additionalProperties":false}`),
		Webhook: tools.Webhook{
			URL:     url,
			Headers: map[string]string{"X-Api-Key": secret, "Authorization": "Bearer " + secret},
		},
	}
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// hang answers only when the caller gives up.
func hang(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

func TestCallRoundTrip(t *testing.T) {
	t.Parallel()

	h := newHook(t, reply(http.StatusOK, " {\"status\": \"shipped\",\n \"items\": 2}\n"))
	set, err := tools.NewSet([]tools.Definition{orderTool(h.srv.URL + "/orders?v=1")},
		tools.Options{Client: testClient(t), UserAgent: "wayfinder-test/1"})
	require.NoError(t, err)

	out, err := set.Call(t.Context(), "lookup_order", json.RawMessage(`{"order": "123"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"shipped","items":2}`, string(out))

	header, body := h.received()
	require.JSONEq(t, `{"order":"123"}`, string(body))
	require.Equal(t, "application/json", header.Get("Content-Type"))
	require.Equal(t, "wayfinder-test/1", header.Get("User-Agent"))
	require.Equal(t, secret, header.Get("X-Api-Key"))
	require.Equal(t, "Bearer "+secret, header.Get("Authorization"))
}

func TestCallDefaultClient(t *testing.T) {
	t.Parallel()
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)

	h := newHook(t, reply(http.StatusOK, `{"status":"open"}`))
	def := orderTool(h.srv.URL)
	def.Webhook.Headers = map[string]string{"User-Agent": "caller-agent"}
	set, err := tools.NewSet([]tools.Definition{def}, tools.Options{})
	require.NoError(t, err)

	out, err := set.Call(t.Context(), "lookup_order", json.RawMessage(`{"order":"7"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"open"}`, string(out))
	header, _ := h.received()
	require.Equal(t, "caller-agent", header.Get("User-Agent"), "a definition's User-Agent wins")
}

func TestCallFailures(t *testing.T) {
	t.Parallel()

	big := `{"pad":"` + strings.Repeat("x", 200) + `"}`
	tests := []struct {
		name    string
		handler http.HandlerFunc
		change  func(d *tools.Definition)
		opts    tools.Options
		tool    string // default lookup_order
		args    string // default {"order":"1"}
		// closed shuts the server down before the call.
		closed bool

		code      string
		status    int
		msg       string
		noRequest bool
	}{
		{
			name: "unknown tool", handler: reply(200, `{}`), tool: "delete_everything",
			code: tools.CodeUnknownTool, msg: `no custom tool named "delete_everything"`, noRequest: true,
		},
		{
			name: "arguments miss a required property", handler: reply(200, `{}`), args: `{}`,
			code: tools.CodeInvalidArguments, msg: "missing property 'order'", noRequest: true,
		},
		{
			name: "arguments of the wrong type", handler: reply(200, `{}`), args: `{"order": 5}`,
			code: tools.CodeInvalidArguments, msg: "at '/order': got number, want string", noRequest: true,
		},
		{
			name: "arguments with an extra property", handler: reply(200, `{}`), args: `{"order":"1","x":1}`,
			code: tools.CodeInvalidArguments, msg: "additional properties 'x' not allowed", noRequest: true,
		},
		{
			name: "arguments not an object", handler: reply(200, `{}`), args: `["1"]`,
			code: tools.CodeInvalidArguments, msg: "want object", noRequest: true,
		},
		{
			name: "empty arguments are an empty object", handler: reply(200, `{}`), args: ` `,
			code: tools.CodeInvalidArguments, msg: "missing property 'order'", noRequest: true,
		},
		{
			name: "arguments not JSON", handler: reply(200, `{}`), args: `{"order":`,
			code: tools.CodeInvalidArguments, msg: "not valid JSON", noRequest: true,
		},
		{
			name: "server error", handler: reply(http.StatusBadGateway, "upstream\n\tbroke\x00"),
			code: tools.CodeHTTPError, status: http.StatusBadGateway, msg: "answered HTTP 502: upstream broke",
		},
		{
			name: "client error without body", handler: reply(http.StatusNotFound, ""),
			code: tools.CodeHTTPError, status: http.StatusNotFound, msg: "answered HTTP 404",
		},
		{
			name: "long error body is cut", handler: reply(http.StatusInternalServerError, strings.Repeat("e", 10000)),
			code: tools.CodeHTTPError, status: http.StatusInternalServerError, msg: strings.Repeat("e", 200) + "…",
		},
		{
			name: "redirect is not followed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
			},
			code: tools.CodeHTTPError, status: http.StatusTemporaryRedirect, msg: "HTTP 307",
		},
		{
			name: "slow webhook", handler: hang, change: func(d *tools.Definition) { d.Webhook.Timeout = 50 * time.Millisecond },
			code: tools.CodeTimeout, msg: "did not answer within 50ms",
		},
		{
			name: "slow body", change: func(d *tools.Definition) { d.Webhook.Timeout = 50 * time.Millisecond },
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, `{"status":`)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			code: tools.CodeTimeout, msg: "did not answer",
		},
		{
			name: "unreachable", handler: reply(200, `{}`), closed: true,
			code: tools.CodeUnreachable, msg: "webhook at 127.0.0.1 failed",
		},
		{
			name: "oversize body with length", handler: reply(200, big), opts: tools.Options{MaxResponseBytes: 64},
			code: tools.CodeInvalidOutput, status: 200, msg: "larger than 64 bytes",
		},
		{
			name: "oversize body chunked", opts: tools.Options{MaxResponseBytes: 64},
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.(http.Flusher).Flush() // no Content-Length
				_, _ = io.WriteString(w, big)
			},
			code: tools.CodeInvalidOutput, status: 200, msg: "larger than 64 bytes",
		},
		{
			name: "body not JSON", handler: reply(200, "<html>hello</html>"),
			code: tools.CodeInvalidOutput, status: 200, msg: "answer is not JSON",
		},
		{
			name: "JSON followed by garbage", handler: reply(200, `{"status":"open"} trailing`),
			code: tools.CodeInvalidOutput, status: 200, msg: "answer is not JSON",
		},
		{
			name: "empty body", handler: reply(200, ""),
			code: tools.CodeInvalidOutput, status: 200, msg: "answer is empty",
		},
		{
			name: "output schema mismatch", handler: reply(200, `{"status":"lost"}`),
			change: func(d *tools.Definition) {
				d.OutputSchema = json.RawMessage(`{"type":"object","properties":{"status":{"enum":["open","shipped"]}},"required":["status"]}`)
			},
			code: tools.CodeInvalidOutput, status: 200, msg: "does not match the output schema: at '/status': value must be one of 'open', 'shipped'",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHook(t, tt.handler)
			def := orderTool(h.srv.URL)
			if tt.change != nil {
				tt.change(&def)
			}
			opts := tt.opts
			opts.Client = testClient(t)
			set, err := tools.NewSet([]tools.Definition{def}, opts)
			require.NoError(t, err)
			if tt.closed {
				h.srv.Close()
			}
			name, args := "lookup_order", `{"order":"1"}`
			if tt.tool != "" {
				name = tt.tool
			}
			if tt.args != "" {
				args = tt.args
			}

			out, err := set.Call(t.Context(), name, json.RawMessage(args))
			require.Nil(t, out)
			var te *tools.Error
			require.ErrorAs(t, err, &te)
			require.Equal(t, tt.code, te.Code, "message: %s", te.Message)
			require.Equal(t, tt.status, te.Status)
			require.Contains(t, te.Message, tt.msg)
			require.NotContains(t, err.Error(), secret)
			if tt.noRequest {
				require.Zero(t, h.calls.Load(), "the webhook was called")
			}
		})
	}
}

// TestCallKeepsSecrets: a webhook that echoes its request headers (or the
// URL holds a token) still leaves no secret in any error.
func TestCallKeepsSecrets(t *testing.T) {
	t.Parallel()

	echo := func(status int, wrap func(string) string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var b strings.Builder
			for k, vs := range r.Header {
				b.WriteString(k + ": " + strings.Join(vs, ",") + "\n")
			}
			w.WriteHeader(status)
			_, _ = io.WriteString(w, wrap(b.String()))
		}
	}
	asIs := func(s string) string { return s }
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		output   string // output schema
		query    string
		closed   bool
		code     string
		redacted bool // the message shows that something was redacted
	}{
		{name: "error body", handler: echo(http.StatusUnauthorized, asIs), code: tools.CodeHTTPError, redacted: true},
		{name: "non-JSON body", handler: echo(http.StatusOK, func(s string) string { return "{" + s }), code: tools.CodeInvalidOutput},
		{
			name: "output schema failure quoting the value",
			handler: echo(http.StatusOK, func(s string) string {
				b, _ := json.Marshal(map[string]string{"status": s})
				return string(b)
			}),
			output: `{"properties":{"status":{"maxLength":3}}}`,
			code:   tools.CodeInvalidOutput,
		},
		{
			name: "output schema failure quoting a pattern mismatch",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, `{"status":"`+r.Header.Get("X-Api-Key")+`"}`)
			},
			output: `{"properties":{"status":{"pattern":"^(open|shipped)$"}}}`,
			code:   tools.CodeInvalidOutput, redacted: true,
		},
		{name: "token in the URL", handler: hang, query: "?token=" + secret, closed: true, code: tools.CodeUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHook(t, tt.handler)
			def := orderTool(h.srv.URL + "/hook" + tt.query)
			def.OutputSchema = json.RawMessage(tt.output)
			set, err := tools.NewSet([]tools.Definition{def}, tools.Options{Client: testClient(t)})
			require.NoError(t, err)
			if tt.closed {
				h.srv.Close()
			}

			_, err = set.Call(t.Context(), "lookup_order", json.RawMessage(`{"order":"1"}`))
			var te *tools.Error
			require.ErrorAs(t, err, &te)
			require.Equal(t, tt.code, te.Code, "message: %s", te.Message)
			require.NotContains(t, err.Error(), secret)
			require.NotContains(t, err.Error(), "/hook", "the URL's path leaked")
			if tt.redacted {
				require.Contains(t, te.Message, "[redacted]")
			}
		})
	}
}

func TestCallContext(t *testing.T) {
	t.Parallel()

	t.Run("cancelled during the call", func(t *testing.T) {
		t.Parallel()
		arrived := make(chan struct{})
		h := newHook(t, func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			hang(w, r)
		})
		set, err := tools.NewSet([]tools.Definition{orderTool(h.srv.URL)}, tools.Options{Client: testClient(t)})
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-arrived
			cancel()
		}()
		_, err = set.Call(ctx, "lookup_order", json.RawMessage(`{"order":"1"}`))
		require.ErrorIs(t, err, context.Canceled)
		var te *tools.Error
		require.False(t, errors.As(err, &te), "ctx's end is not a tool failure: %v", err)
	})

	t.Run("deadline of the caller", func(t *testing.T) {
		t.Parallel()
		h := newHook(t, hang)
		set, err := tools.NewSet([]tools.Definition{orderTool(h.srv.URL)}, tools.Options{Client: testClient(t)})
		require.NoError(t, err)

		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		_, err = set.Call(ctx, "lookup_order", json.RawMessage(`{"order":"1"}`))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var te *tools.Error
		require.False(t, errors.As(err, &te), "ctx's end is not a tool failure: %v", err)
	})

	t.Run("cancelled before the call", func(t *testing.T) {
		t.Parallel()
		h := newHook(t, reply(200, `{}`))
		set, err := tools.NewSet([]tools.Definition{orderTool(h.srv.URL)}, tools.Options{Client: testClient(t)})
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = set.Call(ctx, "lookup_order", json.RawMessage(`{"order":"1"}`))
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, h.calls.Load())
	})
}

func TestCallConcurrent(t *testing.T) {
	t.Parallel()

	h := newHook(t, reply(http.StatusOK, `{"status":"open"}`))
	def := orderTool(h.srv.URL)
	def.OutputSchema = json.RawMessage(`{"type":"object","required":["status"]}`)
	set, err := tools.NewSet([]tools.Definition{def}, tools.Options{Client: testClient(t)})
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			args := `{"order":"1"}`
			if i%2 == 1 {
				args = `{"order":1}`
			}
			_, err := set.Call(t.Context(), "lookup_order", json.RawMessage(args))
			if (err != nil) != (i%2 == 1) {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected result: %v", err)
	}
	require.EqualValues(t, 8, h.calls.Load())
}

func TestNewSet(t *testing.T) {
	t.Parallel()

	second := orderTool("https://tools.example.com/b")
	second.Name = "cancel_order"
	second.Description = ""

	t.Run("tools in order", func(t *testing.T) {
		t.Parallel()
		set, err := tools.NewSet([]tools.Definition{orderTool("https://tools.example.com/a"), second}, tools.Options{})
		require.NoError(t, err)
		got := set.Tools()
		require.Len(t, got, 2)
		require.Equal(t, "lookup_order", got[0].Name)
		require.Equal(t, "Looks up an order.", got[0].Description)
		require.JSONEq(t, string(orderTool("").InputSchema), string(got[0].InputSchema))
		require.Equal(t, "cancel_order", got[1].Name)
		require.True(t, set.Has("cancel_order"))
		require.False(t, set.Has("click"))

		got[0].InputSchema[0] = 'X' // the caller's copy
		require.JSONEq(t, string(orderTool("").InputSchema), string(set.Tools()[0].InputSchema))
	})

	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		set, err := tools.NewSet(nil, tools.Options{})
		require.NoError(t, err)
		require.Empty(t, set.Tools())
		_, err = set.Call(t.Context(), "x", nil)
		var te *tools.Error
		require.ErrorAs(t, err, &te)
		require.Equal(t, tools.CodeUnknownTool, te.Code)
	})

	t.Run("duplicate names", func(t *testing.T) {
		t.Parallel()
		_, err := tools.NewSet([]tools.Definition{orderTool("https://a.example"), orderTool("https://b.example")}, tools.Options{})
		require.ErrorContains(t, err, `name "lookup_order" is used twice`)
	})

	t.Run("invalid definition", func(t *testing.T) {
		t.Parallel()
		bad := orderTool("http://tools.example.com/hook")
		bad.Webhook.Headers["X-Bad"] = secret + "\n"
		_, err := tools.NewSet([]tools.Definition{second, bad}, tools.Options{})
		require.ErrorContains(t, err, "definition 1")
		require.ErrorContains(t, err, "webhook.url")
		require.ErrorContains(t, err, "webhook.headers")
		require.NotContains(t, err.Error(), secret)
	})
}
