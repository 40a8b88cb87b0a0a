package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeToolError: an MCP tool answered that its call failed (isError), or
// the server refused the call with a protocol error.
const CodeToolError = "tool_error"

// maxToolNameLen bounds an MCP tool's name on its server.
const maxToolNameLen = 128

// clientInfo is how Wayfinder introduces itself to MCP servers.
var clientInfo = &mcp.Implementation{Name: "wayfinder", Version: "1"}

// MCPTool is a tool of an MCP server reached over streamable HTTP. A
// Definition with MCP set is implemented by that tool instead of its
// Webhook.
type MCPTool struct {
	// ServerURL is the server's endpoint: absolute https; http only for a
	// loopback host.
	ServerURL string
	// ToolName is the tool's name on the server.
	ToolName string
}

// checkMCP returns the problems of an MCP definition's implementation.
func checkMCP(m *MCPTool) []Problem {
	var ps []Problem
	if msg := checkURL(m.ServerURL); msg != "" {
		ps = append(ps, Problem{Field: "mcp.server_url", Message: msg})
	}
	switch {
	case m.ToolName == "":
		ps = append(ps, Problem{Field: "mcp.tool_name", Message: "required"})
	case len(m.ToolName) > maxToolNameLen:
		ps = append(ps, Problem{Field: "mcp.tool_name", Message: fmt.Sprintf("at most %d bytes", maxToolNameLen)})
	}
	return ps
}

// CheckServerURL returns what is wrong with an MCP server's URL, "" when
// nothing is. The message never repeats the URL.
func CheckServerURL(raw string) string {
	return checkURL(raw)
}

// mcpServers holds a Set's sessions, one per server URL, opened on the
// first call of one of the server's tools and closed by Set.Close.
type mcpServers struct {
	mu       sync.Mutex
	closed   bool
	sessions map[string]*mcpSession
}

// mcpSession is one server's session, or the connection under way.
type mcpSession struct {
	ready   chan struct{} // closed once session or err is set
	session *mcp.ClientSession
	err     error
	token   string // the bearer sent, redacted from messages
}

// Close ends the set's MCP sessions. Calls after Close of an MCP tool fail
// (unreachable); webhook tools keep working. Close is safe on a nil Set
// and may be called more than once.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	s.mcp.mu.Lock()
	s.mcp.closed = true
	sessions := s.mcp.sessions
	s.mcp.sessions = nil
	s.mcp.mu.Unlock()
	var errs []error
	for _, ms := range sessions {
		<-ms.ready
		if ms.session != nil {
			errs = append(errs, ms.session.Close())
		}
	}
	return errors.Join(errs...)
}

// session returns the open session of t's server, connecting on first use.
// Concurrent callers wait for the one connection; a failed connection is
// forgotten so the next call tries again.
func (s *Set) session(ctx context.Context, t *tool) (*mcpSession, error) {
	url := t.def.MCP.ServerURL
	s.mcp.mu.Lock()
	if s.mcp.closed {
		s.mcp.mu.Unlock()
		return nil, t.fail(CodeUnreachable, 0, "the run's MCP sessions are closed")
	}
	ms, ok := s.mcp.sessions[url]
	if !ok {
		ms = &mcpSession{ready: make(chan struct{})}
		if s.mcp.sessions == nil {
			s.mcp.sessions = map[string]*mcpSession{}
		}
		s.mcp.sessions[url] = ms
	}
	s.mcp.mu.Unlock()

	if ok {
		select {
		case <-ms.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if ms.err != nil {
			return nil, ms.err
		}
		return ms, nil
	}

	ms.session, ms.token, ms.err = s.connect(ctx, t)
	close(ms.ready)
	if ms.err != nil {
		s.mcp.mu.Lock()
		if s.mcp.sessions[url] == ms {
			delete(s.mcp.sessions, url)
		}
		s.mcp.mu.Unlock()
		return nil, ms.err
	}
	return ms, nil
}

// connect opens a session with t's server through the set's client.
func (s *Set) connect(ctx context.Context, t *tool) (*mcp.ClientSession, string, error) {
	token := ""
	if s.mcpAuth != nil {
		var err error
		if token, err = s.mcpAuth(ctx, t.def.MCP.ServerURL); err != nil {
			return nil, "", t.fail(CodeUnreachable, 0, "the credential of the MCP server at %s cannot be used: %s",
				t.host, t.sanitise([]byte(err.Error())))
		}
	}
	connectCtx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	session, err := Connect(connectCtx, s.client, t.def.MCP.ServerURL, token, s.userAgent)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		if errors.Is(connectCtx.Err(), context.DeadlineExceeded) {
			return nil, "", t.fail(CodeTimeout, 0, "the MCP server at %s did not answer within %v", t.host, t.timeout)
		}
		msg := t.sanitise([]byte(err.Error()))
		if token != "" {
			msg = strings.ReplaceAll(msg, token, "[redacted]")
		}
		return nil, "", t.fail(CodeUnreachable, 0, "connecting to the MCP server at %s failed: %s", t.host, msg)
	}
	return session, token, nil
}

// Connect opens an MCP session with the streamable HTTP server at
// serverURL through client (whose dialer enforces the egress policy; nil
// uses a plain client), sending token, when not empty, as the
// Authorization bearer of every request. Redirects are not followed. The
// caller closes the session. Errors may quote the server's URL but never
// the token.
func Connect(ctx context.Context, client *http.Client, serverURL, token, userAgent string) (*mcp.ClientSession, error) {
	c := http.Client{}
	if client != nil {
		c = *client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if userAgent == "" {
		userAgent = DefaultUserAgent
	}
	c.Transport = &headerTransport{base: base, token: token, userAgent: userAgent}
	transport := &mcp.StreamableClientTransport{Endpoint: serverURL, HTTPClient: &c, MaxRetries: -1, DisableStandaloneSSE: true}
	session, err := mcp.NewClient(clientInfo, nil).Connect(ctx, transport, nil)
	if err != nil && token != "" {
		return nil, errors.New(strings.ReplaceAll(err.Error(), token, "[redacted]"))
	}
	return session, err
}

// headerTransport adds the bearer and the user agent to every request.
type headerTransport struct {
	base      http.RoundTripper
	token     string
	userAgent string
}

func (h *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	req.Header.Set("User-Agent", h.userAgent)
	resp, err := h.base.RoundTrip(req)
	if err == nil {
		resp.Body = &cappedBody{rc: resp.Body, left: maxMCPResponse}
	}
	return resp, err
}

// maxMCPResponse bounds one answer of an MCP server (the JSON or event
// stream that answers one request; the standalone stream is off), so a
// hostile server cannot make a worker hold more than this.
const maxMCPResponse = 8 << 20

// errMCPResponseTooLarge: an MCP server's answer passed maxMCPResponse.
var errMCPResponseTooLarge = fmt.Errorf("the MCP server's answer is larger than %d bytes", maxMCPResponse)

// cappedBody fails reads past its limit.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// At the limit: fine if the answer ends here.
		var one [1]byte
		if n, err := c.rc.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, errMCPResponseTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.rc.Close() }

// callMCP calls t's tool on its server with the checked arguments.
func (s *Set) callMCP(ctx context.Context, t *tool, body []byte) (json.RawMessage, error) {
	ms, err := s.session(ctx, t)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	res, err := ms.session.CallTool(callCtx, &mcp.CallToolParams{Name: t.def.MCP.ToolName, Arguments: json.RawMessage(body)})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			return nil, t.fail(CodeTimeout, 0, "the MCP server at %s did not answer within %v", t.host, t.timeout)
		}
		msg := t.sanitise([]byte(redactToken(err.Error(), ms.token)))
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, t.fail(CodeToolError, 0, "the MCP server at %s refused the call: %s", t.host, msg)
		}
		return nil, t.fail(CodeUnreachable, 0, "calling the MCP server at %s failed: %s", t.host, msg)
	}
	return s.mcpOutput(t, ms, res)
}

// mcpOutput turns a tool's result into the call's JSON answer: its
// structured content when it has some (checked against the output
// schema), else {"content": the text of its content}.
func (s *Set) mcpOutput(t *tool, ms *mcpSession, res *mcp.CallToolResult) (json.RawMessage, error) {
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts = append(texts, c.Text)
		case *mcp.ImageContent:
			texts = append(texts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			texts = append(texts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		default:
			texts = append(texts, "[content of another kind]")
		}
	}
	text := redactToken(strings.Join(texts, "\n"), ms.token)
	if res.IsError {
		return nil, t.fail(CodeToolError, 0, "the MCP tool answered with an error: %s", t.sanitise([]byte(text)))
	}
	var data []byte
	if res.StructuredContent != nil {
		var err error
		if data, err = json.Marshal(res.StructuredContent); err != nil {
			return nil, t.fail(CodeInvalidOutput, 0, "structured content is not JSON")
		}
	} else {
		if t.output != nil {
			return nil, t.fail(CodeInvalidOutput, 0, "answer has no structured content to match the output schema")
		}
		var err error
		if data, err = json.Marshal(map[string]string{"content": text}); err != nil {
			return nil, t.fail(CodeInvalidOutput, 0, "answer is not text")
		}
	}
	if int64(len(data)) > s.maxBytes {
		return nil, t.fail(CodeInvalidOutput, 0, "answer is larger than %d bytes", s.maxBytes)
	}
	data = []byte(redactToken(string(data), ms.token))
	return t.checkOutput(bytes.TrimSpace(data), 0)
}

// redactToken removes a bearer token from text.
func redactToken(s, token string) string {
	if len(token) < minSecretLen {
		return s
	}
	return strings.ReplaceAll(s, token, "[redacted]")
}

// maxListedTools bounds the tools ListMCP takes from one server.
const maxListedTools = 1000

// ListMCP connects to the MCP server at serverURL (see Connect) and
// returns its tools as definitions implemented by the server, named as on
// the server; the caller renames and validates them. Failures are *Error
// (unreachable, timeout) unless ctx ends first.
func ListMCP(ctx context.Context, client *http.Client, serverURL, token string) ([]Definition, error) {
	fail := func(code, format string, args ...any) error {
		msg := redactToken(fmt.Sprintf(format, args...), token)
		return &Error{Code: code, Message: oneLine(msg)}
	}
	if msg := checkURL(serverURL); msg != "" {
		return nil, fail(CodeUnreachable, "server_url %s", msg)
	}
	session, err := Connect(ctx, client, serverURL, token, "")
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fail(CodeUnreachable, "connecting to the MCP server failed: %v", err)
	}
	defer session.Close()
	var out []Definition
	for tl, err := range session.Tools(ctx, nil) {
		if len(out) >= maxListedTools {
			return nil, fail(CodeInvalidOutput, "the MCP server lists more than %d tools", maxListedTools)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fail(CodeUnreachable, "listing the MCP server's tools failed: %v", err)
		}
		d := Definition{Name: tl.Name, Description: tl.Description, MCP: &MCPTool{ServerURL: serverURL, ToolName: tl.Name}}
		if tl.InputSchema != nil {
			if d.InputSchema, err = json.Marshal(tl.InputSchema); err != nil {
				return nil, fail(CodeInvalidOutput, "tool %q: input schema is not JSON", tl.Name)
			}
		}
		if tl.OutputSchema != nil {
			if d.OutputSchema, err = json.Marshal(tl.OutputSchema); err != nil {
				return nil, fail(CodeInvalidOutput, "tool %q: output schema is not JSON", tl.Name)
			}
		}
		out = append(out, d)
	}
	return out, nil
}
