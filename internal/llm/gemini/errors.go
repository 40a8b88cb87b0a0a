package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// classify turns an error of the SDK into a classified *llm.Error, or
// returns ctx's error when ctx ended. The message never holds the API key
// or the request.
func (m *model) classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	e := &llm.Error{Provider: llm.ProviderGemini}
	var apiErr genai.APIError
	switch {
	case errors.As(err, &apiErr):
		e.Status = apiErr.Code
		e.Class = llm.StatusClass(apiErr.Code)
		if keyInvalid(apiErr) {
			// The Gemini API answers a bad key with 400 INVALID_ARGUMENT.
			e.Class = llm.ErrAuth
		}
		e.Message = apiMessage(apiErr, e.Class)
		if e.Class == llm.ErrRateLimited {
			e.RetryAfter = retryDelay(apiErr)
		}
	case errors.Is(err, context.DeadlineExceeded):
		e.Class, e.Message = llm.ErrTransient, "no answer within the attempt's timeout"
	case llm.IsNetworkError(err):
		e.Class, e.Message = llm.ErrTransient, "network error: "+err.Error()
	case llm.IsJSONError(err):
		e.Class, e.Message = llm.ErrUnparseable, jsonMessage(err)
	default:
		e.Class, e.Message = llm.ErrTransient, err.Error()
	}
	e.Message = llm.Redact(e.Message, m.apiKey)
	return e
}

// apiMessage is what the API said about an error, or for an
// authentication error only its status.
func apiMessage(apiErr genai.APIError, class error) string {
	switch {
	case class == llm.ErrAuth && apiErr.Code == http.StatusForbidden:
		return "the API key lacks permission (" + apiErr.Status + ")"
	case class == llm.ErrAuth:
		return "the API key was rejected (" + apiErr.Status + ")"
	case apiErr.Message != "":
		return apiErr.Status + ": " + apiErr.Message
	default:
		return http.StatusText(apiErr.Code)
	}
}

// keyInvalid reports whether an error says the API key is not valid.
func keyInvalid(apiErr genai.APIError) bool {
	for _, d := range apiErr.Details {
		if d["reason"] == "API_KEY_INVALID" {
			return true
		}
	}
	return strings.Contains(apiErr.Message, "API key not valid")
}

// retryDelay reads the google.rpc.RetryInfo detail of an error, zero when
// there is none.
func retryDelay(apiErr genai.APIError) time.Duration {
	for _, d := range apiErr.Details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if delay, err := time.ParseDuration(s); err == nil && delay > 0 {
			return delay
		}
	}
	return 0
}

// jsonMessage says which part of an answer could not be decoded, without
// quoting it.
func jsonMessage(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) && strings.HasSuffix(typ.Field, "functionCall.args") {
		return "the arguments of a tool call are not a JSON object"
	}
	return "the answer is not the JSON the API returns"
}
