// Package llmtest runs local fake model servers that speak the wire formats
// of the Anthropic Messages API, the OpenAI Chat Completions API and the
// Gemini generateContent API, so tests can drive the real vendor SDKs (and
// the whole service) without a hosted model.
//
// A Server decodes each request into the provider-neutral llm form (a Call),
// asks a Script for the answer (a Reply) and encodes it in the vendor's
// response JSON, or in the vendor's error JSON when Reply.Status is set.
package llmtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// Script decides the answer to one call; it sees the decoded call. It may
// be called from several goroutines at once. A nil Script answers "ok".
type Script func(call Call) Reply

// Replies is a Script that answers the calls in order with replies; once
// they run out, the last one answers every further call. With no replies
// it answers "ok".
func Replies(replies ...Reply) Script {
	var mu sync.Mutex
	next := 0
	return func(Call) Reply {
		mu.Lock()
		defer mu.Unlock()
		if len(replies) == 0 {
			return Reply{Text: "ok"}
		}
		r := replies[min(next, len(replies)-1)]
		next++
		return r
	}
}

// Call is one request as the fake server decoded it.
type Call struct {
	// Path is the request's URL path.
	Path string
	// Model is the model the request named.
	Model string
	// System is the system prompt.
	System string
	// Messages is the conversation in llm form. Tool results arrive as
	// ToolResult parts of user messages; images as Image parts with their
	// decoded bytes.
	Messages []llm.Message
	// Tools are the names of the tools offered.
	Tools []string
	// ToolChoice in llm terms: "" (auto or absent), "any" or "none".
	ToolChoice string
	// Temperature as sent; nil when absent.
	Temperature *float64
	// MaxOutputTokens as sent; 0 when absent.
	MaxOutputTokens int
	// ImageCount counts the images anywhere in the conversation, those
	// inside tool results included.
	ImageCount int
	// Header is the request's header (auth headers included, so tests
	// can check them).
	Header http.Header
	// Body is the raw request JSON.
	Body []byte
}

// Reply is the answer to one call.
type Reply struct {
	// Text is the answer's text; with Status set, the error message.
	Text string
	// ToolCalls the model makes. An empty ID gets a generated one (the
	// Gemini server sends no ID then, as the Gemini API does). Arguments
	// that are not valid JSON are sent as a JSON string, the way a broken
	// model would.
	ToolCalls []llm.ToolCall
	// Usage is reported in the vendor's fields; InputTokens includes
	// CachedInputTokens, as in llm.Usage.
	Usage llm.Usage
	// StopReason overrides the vendor's stop or finish reason (for
	// example "refusal", "content_filter" or "SAFETY").
	StopReason string
	// Status, when non-zero, makes the server answer with this HTTP status
	// and the vendor's error JSON.
	Status int
	// RetryAfter, with Status, is sent as a Retry-After header (and, by
	// the Gemini server, as a google.rpc.RetryInfo detail).
	RetryAfter time.Duration
	// Delay holds the answer back; the request's cancellation ends the
	// wait (and the answer).
	Delay time.Duration
	// Drop closes the connection without an answer, as a network failure.
	Drop bool
}

// Server is a running fake vendor server. It shuts down when the test ends.
type Server struct {
	// URL is the base URL to give the provider (llm.Settings.BaseURL).
	URL string

	t      testing.TB
	script Script
	srv    *httptest.Server
	done   chan struct{}

	mu    sync.Mutex
	calls []Call
}

// Calls returns the calls received so far, in order of arrival.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// vendor is one wire format.
type vendor interface {
	// decode reads a request into a Call (Path, Header and Body are set
	// by the caller).
	decode(r *http.Request, body []byte) (Call, error)
	// answer encodes a successful reply to call.
	answer(call Call, reply Reply, seq int) any
	// failure encodes an error reply.
	failure(reply Reply) any
	// matches reports whether the request is for this API.
	matches(r *http.Request) bool
}

func newServer(t testing.TB, script Script, v vendor, urlSuffix string) *Server {
	t.Helper()
	if script == nil {
		script = Replies()
	}
	s := &Server{t: t, script: script, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, v)
	}))
	s.URL = s.srv.URL + urlSuffix
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, v vendor) {
	if r.Method != http.MethodPost || !v.matches(r) {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	call, err := v.decode(r, body)
	if err != nil {
		s.t.Errorf("llmtest: cannot decode %s request: %v", r.URL.Path, err)
		writeJSON(w, http.StatusBadRequest, v.failure(Reply{Status: http.StatusBadRequest, Text: err.Error()}))
		return
	}
	call.Path = r.URL.Path
	call.Header = r.Header.Clone()
	call.Body = body
	call.ImageCount = countImages(call.Messages)

	s.mu.Lock()
	s.calls = append(s.calls, call)
	seq := len(s.calls)
	s.mu.Unlock()

	reply := s.script(call)
	if reply.Delay > 0 && !s.wait(r.Context(), reply.Delay) {
		return
	}
	switch {
	case reply.Drop:
		drop(w)
	case reply.Status != 0:
		if reply.RetryAfter > 0 {
			secs := int((reply.RetryAfter + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
		writeJSON(w, reply.Status, v.failure(reply))
	default:
		writeJSON(w, http.StatusOK, v.answer(call, reply, seq))
	}
}

// wait sleeps d unless the request or the server ends first; it reports
// whether the whole wait passed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// drop closes the connection without writing a response.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func countImages(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Image != nil {
				n++
			}
			if p.ToolResult != nil {
				n += len(p.ToolResult.Images)
			}
		}
	}
	return n
}

// arguments is a tool call's arguments for the wire: the JSON itself when
// it is valid, else the text as a JSON string.
func arguments(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(`{}`)
	}
	if json.Valid(raw) {
		return raw
	}
	s, _ := json.Marshal(string(raw))
	return s
}

// callID is the ID of a reply's i-th tool call: its own, or a generated one.
func callID(prefix string, seq, i int, tc llm.ToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("%s%d_%d", prefix, seq, i)
}

// errorMessage is the message of an error reply.
func errorMessage(reply Reply) string {
	if reply.Text != "" {
		return reply.Text
	}
	return http.StatusText(reply.Status)
}

// decodeText reads a JSON value that is either a string or an array of
// {"type":"text","text":…} blocks.
func decodeText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", fmt.Errorf("text: %w", err)
	}
	var out string
	for _, b := range blocks {
		out += b.Text
	}
	return out, nil
}

// PNG returns a small valid PNG image (1×1, transparent) for tests that
// send screenshots.
func PNG() []byte {
	b, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
	return b
}
