package tools

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wayfinder/wayfinder/internal/schema"
	"golang.org/x/net/http/httpguts"
)

// Limits of a definition.
const (
	// DefaultTimeout bounds a webhook call whose definition sets none.
	DefaultTimeout = 30 * time.Second
	// MaxTimeout is the longest timeout a definition may set.
	MaxTimeout = 5 * time.Minute
	// MaxDescriptionLen is the longest description, in characters.
	MaxDescriptionLen = 4096

	maxURLLen         = 2048
	maxHeaders        = 32
	maxHeaderValueLen = 8192
)

// namePattern is what every model vendor accepts as a function name.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Definition is one custom tool.
type Definition struct {
	// Name is what the model calls the tool: 1-64 characters of
	// [a-zA-Z0-9_-], unique within a run.
	Name string
	// Description tells the model what the tool does; at most 4096
	// characters.
	Description string
	// InputSchema is the JSON Schema of the arguments; it must be an object
	// schema ("type": "object").
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema the webhook's answer must match;
	// optional (empty or null: any JSON is accepted).
	OutputSchema json.RawMessage
	// Webhook receives the arguments, unless MCP is set.
	Webhook Webhook
	// MCP, when set, implements the tool instead of Webhook: a tool of an
	// MCP server.
	MCP *MCPTool
}

// Webhook is the caller's endpoint that implements a tool: it receives the
// arguments as a JSON POST body and answers with the tool's output as JSON.
type Webhook struct {
	// URL is absolute https; http only for a loopback host.
	URL string
	// Headers are sent with every call (authentication, typically). Their
	// values are treated as secrets.
	Headers map[string]string
	// Timeout bounds one call; zero means DefaultTimeout, at most
	// MaxTimeout.
	Timeout time.Duration
}

// Problem is one thing wrong with a definition.
type Problem struct {
	// Field is the definition's field, named as in the API: "name",
	// "description", "input_schema", "output_schema", "webhook.url",
	// "webhook.headers", "webhook.timeout", "mcp.server_url",
	// "mcp.tool_name".
	Field string
	// Message says what is wrong, without header values.
	Message string
}

// managedHeaders are set by the call itself or by the HTTP transport; a
// definition may not set them.
var managedHeaders = map[string]bool{
	"Host": true, "Content-Type": true, "Content-Length": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Upgrade": true,
	"Te": true, "Trailer": true, "Expect": true,
}

// Validate checks one definition and returns its problems, none when it is
// valid. reserved reports names taken by built-in tools; nil reserves none.
// Uniqueness of names across a run is NewSet's to check.
func Validate(d Definition, reserved func(name string) bool) []Problem {
	var ps []Problem
	add := func(field, format string, args ...any) {
		ps = append(ps, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}

	switch {
	case d.Name == "":
		add("name", "required")
	case !namePattern.MatchString(d.Name):
		add("name", "must be 1-64 characters of letters, digits, '_' and '-'")
	case reserved != nil && reserved(d.Name):
		add("name", "%q is the name of a built-in tool", d.Name)
	}

	if !utf8.ValidString(d.Description) {
		add("description", "must be valid UTF-8")
	} else if n := utf8.RuneCountInString(d.Description); n > MaxDescriptionLen {
		add("description", "at most %d characters (has %d)", MaxDescriptionLen, n)
	}

	if absent(d.InputSchema) {
		add("input_schema", "required")
	} else if _, doc, err := schema.Compile(d.InputSchema, "input_schema"); err != nil {
		add("input_schema", "%v", err)
	} else if !isObjectSchema(doc) {
		add("input_schema", `must be an object schema ("type": "object")`)
	}
	if !absent(d.OutputSchema) {
		if _, _, err := schema.Compile(d.OutputSchema, "output_schema"); err != nil {
			add("output_schema", "%v", err)
		}
	}

	if d.MCP != nil {
		return append(ps, checkMCP(d.MCP)...)
	}
	if msg := checkURL(d.Webhook.URL); msg != "" {
		add("webhook.url", "%s", msg)
	}
	for _, msg := range checkHeaders(d.Webhook.Headers) {
		add("webhook.headers", "%s", msg)
	}
	switch {
	case d.Webhook.Timeout < 0:
		add("webhook.timeout", "must not be negative")
	case d.Webhook.Timeout > MaxTimeout:
		add("webhook.timeout", "at most %v", MaxTimeout)
	}
	return ps
}

// checkURL returns what is wrong with a webhook URL, "" when nothing is.
// Messages never repeat the URL: its path or query may hold a token.
func checkURL(raw string) string {
	if raw == "" {
		return "required"
	}
	if len(raw) > maxURLLen {
		return fmt.Sprintf("at most %d bytes", maxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return "must be an absolute URL with a host"
	}
	if u.User != nil {
		return "must not contain credentials; send them in headers"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		if isLoopback(u.Hostname()) {
			return ""
		}
		return "must use https (http only for a loopback host)"
	}
	return "must use https"
}

// isLoopback reports whether host names this machine.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// checkHeaders returns what is wrong with a webhook's headers. Messages name
// headers but never show their values.
func checkHeaders(h map[string]string) []string {
	var msgs []string
	if len(h) > maxHeaders {
		msgs = append(msgs, fmt.Sprintf("at most %d headers", maxHeaders))
	}
	for name, value := range h {
		switch {
		case !httpguts.ValidHeaderFieldName(name):
			msgs = append(msgs, fmt.Sprintf("%q is not a valid header name", truncate(name, 64)))
		case managedHeaders[http.CanonicalHeaderKey(name)]:
			msgs = append(msgs, fmt.Sprintf("%q is set by the call and cannot be overridden", name))
		case !httpguts.ValidHeaderFieldValue(value):
			msgs = append(msgs, fmt.Sprintf("the value of %q contains characters not allowed in a header", name))
		case len(value) > maxHeaderValueLen:
			msgs = append(msgs, fmt.Sprintf("the value of %q is longer than %d bytes", name, maxHeaderValueLen))
		}
	}
	// Map order is random; keep messages stable for callers and tests.
	slices.Sort(msgs)
	return msgs
}

// truncate shortens s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
