package promptrunner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/net/http/httpguts"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// Version is the version of the webhook contract this package speaks.
const Version = 1

const (
	// maxAnswerBytes bounds the host's answer.
	maxAnswerBytes = 8 << 20
	// maxErrorSnippet bounds the part of an error body quoted in errors.
	maxErrorSnippet = 200
	defaultTimeout  = 30 * time.Second
	userAgent       = "wayfinder"
)

type callKey struct{}

type call struct {
	runID string
	role  string
	step  int
}

// WithCall returns ctx carrying the run, the prompt's role ("controller" or
// "judge") and the step number, which the webhook receives as run_id, role
// and step. Other models ignore it.
func WithCall(ctx context.Context, runID, role string, step int) context.Context {
	return context.WithValue(ctx, callKey{}, call{runID: runID, role: role, step: step})
}

// model is the webhook as an llm.Model.
type model struct {
	url     string
	host    string // for errors: the URL's path and query may hold secrets
	headers http.Header
	client  *http.Client
	hint    string // s.Model
	temp    *float64
	maxOut  int
}

// New returns a Model that POSTs every prompt to s.URL (an absolute http or
// https URL) with s.Headers, and passes s.Model along as a hint. Requests
// use s.HTTPClient, or a client with s.Timeout per attempt (default 30s)
// that does not follow redirects. s.Temperature and s.MaxOutputTokens apply
// when a request does not set its own.
func New(s llm.Settings) (llm.Model, error) {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("prompt runner: URL must be an absolute http or https URL")
	}
	headers := make(http.Header, len(s.Headers)+2)
	for k, v := range s.Headers {
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("prompt runner: invalid header name %q", k)
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return nil, fmt.Errorf("prompt runner: header %q: invalid value", k)
		}
		headers.Set(k, v)
	}
	if headers.Get("User-Agent") == "" {
		headers.Set("User-Agent", userAgent)
	}
	headers.Set("Content-Type", "application/json")
	headers.Set("Accept", "application/json")

	client := s.HTTPClient
	if client == nil {
		timeout := s.Timeout
		if timeout <= 0 {
			timeout = defaultTimeout
		}
		client = &http.Client{
			Timeout: timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return &model{
		url:     u.String(),
		host:    u.Host,
		headers: headers,
		client:  client,
		hint:    s.Model,
		temp:    s.Temperature,
		maxOut:  s.MaxOutputTokens,
	}, nil
}

// Provider is llm.ProviderPromptRunner.
func (m *model) Provider() string { return llm.ProviderPromptRunner }

// Name is the model hint, or "webhook" without one.
func (m *model) Name() string {
	if m.hint == "" {
		return "webhook"
	}
	return m.hint
}

// Complete POSTs req to the webhook and returns its answer.
func (m *model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, _ := ctx.Value(callKey{}).(call)
	wr, err := toWire(req, c, m.hint, m.temp, m.maxOut)
	if err != nil {
		return nil, m.fail(llm.ErrInvalidRequest, 0, err.Error())
	}
	body, err := json.Marshal(wr)
	if err != nil {
		return nil, m.fail(llm.ErrInvalidRequest, 0, "encoding the request: "+err.Error())
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return nil, m.fail(llm.ErrInvalidRequest, 0, "building the request")
	}
	hreq.Header = m.headers.Clone()

	hresp, err := m.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, m.fail(llm.ErrTransient, 0, m.redact(transportError(err)))
	}
	defer hresp.Body.Close()

	answer, err := io.ReadAll(io.LimitReader(hresp.Body, maxAnswerBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, m.fail(llm.ErrTransient, hresp.StatusCode, m.redact("reading the answer: "+transportError(err)))
	}
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		return nil, m.statusError(hresp, answer)
	}
	if len(answer) > maxAnswerBytes {
		return nil, m.fail(llm.ErrUnparseable, hresp.StatusCode, fmt.Sprintf("answer larger than %d MiB", maxAnswerBytes>>20))
	}
	resp, err := fromWire(answer)
	if err != nil {
		class := llm.ErrUnparseable
		if errors.Is(err, errEmpty) {
			class = llm.ErrRefused
		}
		return nil, m.fail(class, hresp.StatusCode, m.redact(err.Error()))
	}
	return resp, nil
}

func (m *model) fail(class error, status int, msg string) *llm.Error {
	return &llm.Error{
		Class:    class,
		Provider: llm.ProviderPromptRunner,
		Status:   status,
		Message:  "webhook at " + m.host + ": " + msg,
	}
}

// statusError classifies a non-2xx answer.
func (m *model) statusError(hresp *http.Response, body []byte) error {
	status := hresp.StatusCode
	var class error
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		class = llm.ErrAuth
	case status == http.StatusTooManyRequests:
		class = llm.ErrRateLimited
	case status == http.StatusRequestTimeout || status >= 500:
		class = llm.ErrTransient
	default:
		class = llm.ErrInvalidRequest
	}
	msg := http.StatusText(status)
	if msg == "" {
		msg = "status " + strconv.Itoa(status)
	}
	if status >= 300 && status < 400 {
		msg += " (redirects are not followed)"
	}
	if s := snippet(body); s != "" {
		msg += ": " + s
	}
	e := m.fail(class, status, m.redact(msg))
	if class == llm.ErrRateLimited || class == llm.ErrTransient {
		e.RetryAfter = retryAfter(hresp.Header.Get("Retry-After"), time.Now())
	}
	return e
}

// redact removes the configured header values from msg: a host may echo a
// header (a rejected token) back in its error body.
func (m *model) redact(msg string) string {
	values := make([]string, 0, len(m.headers))
	for k, vs := range m.headers {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Type", "Accept", "User-Agent":
			continue
		}
		for _, v := range vs {
			if v = strings.TrimSpace(v); v != "" {
				values = append(values, v)
			}
			// The credential of "Bearer <token>" alone, too.
			if _, cred, ok := strings.Cut(v, " "); ok && len(strings.TrimSpace(cred)) >= 4 {
				values = append(values, strings.TrimSpace(cred))
			}
		}
	}
	// Longest first, so a value that contains another goes whole.
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
	for _, v := range values {
		msg = strings.ReplaceAll(msg, v, "[redacted]")
	}
	return msg
}

// transportError is err without the URL a *url.Error repeats (its path and
// query may hold secrets).
func transportError(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var timeout interface{ Timeout() bool }
	if errors.As(err, &timeout) && timeout.Timeout() {
		return "timed out: " + err.Error()
	}
	return err.Error()
}

// snippet is the start of an error body, on one line, for error messages.
func snippet(body []byte) string {
	s := strings.ToValidUTF8(string(body[:min(len(body), 4*maxErrorSnippet)]), "")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if r := []rune(s); len(r) > maxErrorSnippet {
		s = string(r[:maxErrorSnippet]) + "…"
	}
	return s
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil {
		return max(time.Duration(secs)*time.Second, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

func newCallID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "call_" + hex.EncodeToString(b)
}
