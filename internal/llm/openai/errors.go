package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/openai/openai-go/v3"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// classify turns an error of the SDK into a classified *llm.Error, or
// returns ctx's error when ctx ended. The message never holds the API key
// or the request.
func (m *model) classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	e := &llm.Error{Provider: llm.ProviderOpenAI}
	var apiErr *sdk.Error
	switch {
	case errors.As(err, &apiErr):
		e.Status = apiErr.StatusCode
		e.Class = statusClass(apiErr.StatusCode)
		e.Message = apiMessage(apiErr)
		if e.Class == llm.ErrRateLimited && apiErr.Response != nil {
			e.RetryAfter = retryAfter(apiErr.Response.Header, time.Now())
		}
	case errors.Is(err, context.DeadlineExceeded):
		e.Class, e.Message = llm.ErrTransient, "no answer within the attempt's timeout"
	case isNetwork(err):
		e.Class, e.Message = llm.ErrTransient, "network error: "+err.Error()
	case isJSON(err):
		e.Class, e.Message = llm.ErrUnparseable, "the answer is not the JSON the API returns"
	default:
		e.Class, e.Message = llm.ErrTransient, err.Error()
	}
	e.Message = clean(e.Message, m.apiKey)
	return e
}

// apiMessage is what the API said about an error, or for an
// authentication error only its kind (such messages quote part of the key).
func apiMessage(apiErr *sdk.Error) string {
	kind := apiErr.Type
	if apiErr.Code != "" {
		kind += "/" + apiErr.Code
	}
	switch {
	case apiErr.StatusCode == http.StatusUnauthorized:
		return "the API key was rejected (" + kind + ")"
	case apiErr.StatusCode == http.StatusForbidden:
		return "the API key lacks permission (" + kind + ")"
	case apiErr.Message != "":
		return kind + ": " + apiErr.Message
	default:
		return http.StatusText(apiErr.StatusCode)
	}
}

// statusClass maps an HTTP status to an error class.
func statusClass(status int) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return llm.ErrAuth
	case status == http.StatusTooManyRequests:
		return llm.ErrRateLimited
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		return llm.ErrTransient
	case status >= 400:
		return llm.ErrInvalidRequest
	default:
		return llm.ErrTransient
	}
}

// retryAfter reads the wait a response asks for: retry-after-ms, or
// Retry-After in seconds or as an HTTP date. Zero when there is none.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func isNetwork(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func isJSON(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syntax) || errors.As(err, &typ)
}

// maxMessage bounds an error message.
const maxMessage = 300

// clean removes the API key from msg and bounds its length.
func clean(msg, apiKey string) string {
	if apiKey != "" {
		msg = strings.ReplaceAll(msg, apiKey, "[redacted]")
	}
	if len(msg) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
