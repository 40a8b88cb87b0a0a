package tools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/schema"
)

// Defaults of Options.
const (
	// DefaultMaxResponseBytes bounds a webhook's answer.
	DefaultMaxResponseBytes = 1 << 20
	// DefaultUserAgent identifies webhook calls.
	DefaultUserAgent = "Wayfinder-Tools/1"

	// snippetReadBytes and snippetRunes bound what an http_error quotes
	// of the webhook's answer.
	snippetReadBytes = 4096
	snippetRunes     = 200
	// minSecretLen: shorter header values (and parts of values) are too
	// common to redact from quoted text without garbling it.
	minSecretLen = 4
)

// Options configure a Set.
type Options struct {
	// Client sends webhook calls. The caller supplies one whose dialer
	// enforces the egress policy; nil uses a plain client. Its redirect
	// policy is replaced: webhooks are never redirected.
	Client *http.Client
	// MaxResponseBytes bounds a webhook's answer; default
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// UserAgent of webhook calls; default DefaultUserAgent. A definition's
	// own User-Agent header wins.
	UserAgent string
	// MCPAuth returns the bearer token to send to an MCP server, "" for
	// none; asked once per server, when the set first calls one of its
	// tools. Nil sends none.
	MCPAuth func(ctx context.Context, serverURL string) (string, error)
}

// Set is the custom tools of one run, with their schemas compiled. It is
// safe for concurrent use. A set with MCP tools holds a session per server
// once one of its tools is called: Close it when the run ends.
type Set struct {
	tools     []*tool // in definition order
	byName    map[string]*tool
	client    *http.Client
	maxBytes  int64
	userAgent string
	mcpAuth   func(ctx context.Context, serverURL string) (string, error)
	mcp       mcpServers
}

// tool is one compiled definition.
type tool struct {
	def     Definition
	input   *jsonschema.Schema
	output  *jsonschema.Schema // nil: any JSON
	host    string             // the only part of the URL messages show
	timeout time.Duration
	secrets []string // header values and their parts, longest first
}

// NewSet validates and compiles defs. It fails when a definition is invalid
// (see Validate; no names are reserved here) or two share a name.
func NewSet(defs []Definition, opts Options) (*Set, error) {
	s := &Set{
		byName:    make(map[string]*tool, len(defs)),
		maxBytes:  opts.MaxResponseBytes,
		userAgent: opts.UserAgent,
		mcpAuth:   opts.MCPAuth,
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxResponseBytes
	}
	if s.userAgent == "" {
		s.userAgent = DefaultUserAgent
	}
	client := http.Client{}
	if opts.Client != nil {
		client = *opts.Client
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	s.client = &client

	for i, d := range defs {
		if ps := Validate(d, nil); len(ps) > 0 {
			msgs := make([]string, len(ps))
			for j, p := range ps {
				msgs[j] = p.Field + ": " + p.Message
			}
			return nil, fmt.Errorf("tools: definition %d (%q): %s", i, truncate(d.Name, 64), strings.Join(msgs, "; "))
		}
		if _, dup := s.byName[d.Name]; dup {
			return nil, fmt.Errorf("tools: definition %d: name %q is used twice", i, d.Name)
		}
		t, err := compile(d)
		if err != nil {
			return nil, fmt.Errorf("tools: definition %d (%q): %w", i, d.Name, err)
		}
		s.tools = append(s.tools, t)
		s.byName[d.Name] = t
	}
	return s, nil
}

// compile builds a tool from a valid definition.
func compile(d Definition) (*tool, error) {
	t := &tool{def: d, timeout: d.Webhook.Timeout}
	if t.timeout == 0 {
		t.timeout = DefaultTimeout
	}
	var err error
	if t.input, _, err = schema.Compile(d.InputSchema, "input_schema"); err != nil {
		return nil, fmt.Errorf("input_schema: %w", err)
	}
	if !absent(d.OutputSchema) {
		if t.output, _, err = schema.Compile(d.OutputSchema, "output_schema"); err != nil {
			return nil, fmt.Errorf("output_schema: %w", err)
		}
	}
	raw := d.Webhook.URL
	if d.MCP != nil {
		raw, t.timeout = d.MCP.ServerURL, DefaultTimeout
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	t.host = u.Hostname()
	// The URL's path or query may hold a token too.
	parts := []string{raw, u.RawQuery}
	for _, v := range d.Webhook.Headers {
		parts = append(parts, v)
		parts = append(parts, strings.FieldsFunc(v, func(r rune) bool {
			return unicode.IsSpace(r) || r == ',' || r == ';'
		})...)
	}
	seen := map[string]bool{}
	for _, p := range parts {
		if len(p) >= minSecretLen && !seen[p] {
			seen[p] = true
			t.secrets = append(t.secrets, p)
		}
	}
	// Longest first, so a whole value is redacted before its parts.
	slices.SortFunc(t.secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return t, nil
}

// Tools describes the set's tools for the model, in definition order.
func (s *Set) Tools() []llm.Tool {
	out := make([]llm.Tool, len(s.tools))
	for i, t := range s.tools {
		out[i] = llm.Tool{
			Name:        t.def.Name,
			Description: t.def.Description,
			InputSchema: bytes.Clone(bytes.TrimSpace(t.def.InputSchema)),
		}
	}
	return out
}

// Has reports whether the set has a tool of that name.
func (s *Set) Has(name string) bool {
	_, ok := s.byName[name]
	return ok
}

// Call runs the named tool with args (a JSON object; empty means {}) and
// returns the webhook's (or MCP tool's) JSON answer. Failures are *Error; when ctx ends
// first, Call returns ctx's error instead.
func (s *Set) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, ok := s.byName[name]
	if !ok {
		return nil, &Error{Code: CodeUnknownTool, Message: fmt.Sprintf("no custom tool named %q", truncate(name, 64))}
	}
	body, err := t.checkArguments(args)
	if err != nil {
		return nil, err
	}
	if t.def.MCP != nil {
		return s.callMCP(ctx, t, body)
	}
	return s.post(ctx, t, body)
}

// checkArguments validates args against the input schema and returns the
// request body.
func (t *tool) checkArguments(args json.RawMessage) ([]byte, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := schema.Parse(args)
	if err != nil {
		return nil, t.fail(CodeInvalidArguments, 0, "arguments are not valid JSON: %s", oneLine(err.Error()))
	}
	if err := t.input.Validate(v); err != nil {
		return nil, t.fail(CodeInvalidArguments, 0, "arguments do not match the input schema: %s", schema.Describe(err))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return nil, t.fail(CodeInvalidArguments, 0, "arguments are not valid JSON: %s", oneLine(err.Error()))
	}
	return buf.Bytes(), nil
}

// post sends body to the tool's webhook and checks the answer.
func (s *Set) post(ctx context.Context, t *tool, body []byte) (json.RawMessage, error) {
	callCtx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, t.def.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return nil, t.fail(CodeUnreachable, 0, "cannot build the request to %s", t.host)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", s.userAgent)
	for k, v := range t.def.Webhook.Headers {
		req.Header.Set(k, v)
	}

	resp, err := s.client.Do(req)
	if err != nil {
		return nil, t.transportError(ctx, callCtx, err, "calling")
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, err := io.ReadAll(io.LimitReader(resp.Body, snippetReadBytes))
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := fmt.Sprintf("webhook at %s answered HTTP %d", t.host, resp.StatusCode)
		if s := t.sanitise(snippet); s != "" {
			msg += ": " + s
		}
		return nil, t.fail(CodeHTTPError, resp.StatusCode, "%s", msg)
	}

	if resp.ContentLength > s.maxBytes {
		return nil, t.fail(CodeInvalidOutput, resp.StatusCode, "answer is larger than %d bytes", s.maxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, s.maxBytes+1))
	if err != nil {
		return nil, t.transportError(ctx, callCtx, err, "reading the answer of")
	}
	if int64(len(data)) > s.maxBytes {
		return nil, t.fail(CodeInvalidOutput, resp.StatusCode, "answer is larger than %d bytes", s.maxBytes)
	}
	return t.checkOutput(data, resp.StatusCode)
}

// checkOutput requires a JSON answer that matches the output schema.
func (t *tool) checkOutput(data []byte, status int) (json.RawMessage, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, t.fail(CodeInvalidOutput, status, "answer is empty; a JSON body is required")
	}
	v, err := schema.Parse(data)
	if err != nil {
		return nil, t.fail(CodeInvalidOutput, status, "answer is not JSON: %s", t.sanitise([]byte(err.Error())))
	}
	if t.output != nil {
		if err := t.output.Validate(v); err != nil {
			return nil, t.fail(CodeInvalidOutput, status, "answer does not match the output schema: %s",
				t.sanitise([]byte(schema.Describe(err))))
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, t.fail(CodeInvalidOutput, status, "answer is not JSON")
	}
	return buf.Bytes(), nil
}

// transportError classifies a failure to send the request or read the
// answer: ctx's own end, the call's timeout, or an unreachable webhook. The
// message quotes the underlying cause without the URL.
func (t *tool) transportError(ctx, callCtx context.Context, err error, doing string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ne net.Error
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return t.fail(CodeTimeout, 0, "webhook at %s did not answer within %v", t.host, t.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // url.Error repeats the whole URL
	}
	return t.fail(CodeUnreachable, 0, "%s webhook at %s failed: %s", doing, t.host, t.sanitise([]byte(err.Error())))
}

// fail builds the tool's *Error.
func (t *tool) fail(code string, status int, format string, args ...any) *Error {
	return &Error{Code: code, Status: status, Message: fmt.Sprintf("tool %q: ", t.def.Name) + fmt.Sprintf(format, args...)}
}

// sanitise makes text from outside (an answer, a transport error) fit for a
// message: header values redacted, valid UTF-8 on one line, short.
func (t *tool) sanitise(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	for _, secret := range t.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return truncate(oneLine(s), snippetRunes)
}
