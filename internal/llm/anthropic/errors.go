package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// classify turns an error of the SDK into a classified *llm.Error, or
// returns ctx's error when ctx ended. The message never holds the API key
// or the request.
func (m *model) classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	e := &llm.Error{Provider: llm.ProviderAnthropic}
	var apiErr *sdk.Error
	switch {
	case errors.As(err, &apiErr):
		e.Status = apiErr.StatusCode
		e.Class = llm.StatusClass(apiErr.StatusCode)
		if apiErr.Type() == "overloaded_error" {
			e.Class = llm.ErrTransient
		}
		e.Message = apiMessage(apiErr)
		if e.Class == llm.ErrRateLimited && apiErr.Response != nil {
			e.RetryAfter = llm.RetryAfter(apiErr.Response.Header, time.Now())
		}
	case errors.Is(err, context.DeadlineExceeded):
		e.Class, e.Message = llm.ErrTransient, "no answer within the attempt's timeout"
	case llm.IsNetworkError(err):
		e.Class, e.Message = llm.ErrTransient, "network error: "+err.Error()
	case llm.IsJSONError(err):
		e.Class, e.Message = llm.ErrUnparseable, "the answer is not the JSON the API returns"
	default:
		e.Class, e.Message = llm.ErrTransient, err.Error()
	}
	e.Message = llm.Redact(e.Message, m.apiKey)
	return e
}

// apiMessage is what the API said about an error, or for an
// authentication error only its kind (such messages may quote the key).
func apiMessage(apiErr *sdk.Error) string {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
	switch {
	case apiErr.StatusCode == http.StatusUnauthorized:
		return "the API key was rejected (" + body.Error.Type + ")"
	case apiErr.StatusCode == http.StatusForbidden:
		return "the API key lacks permission (" + body.Error.Type + ")"
	case body.Error.Message != "":
		return body.Error.Type + ": " + body.Error.Message
	default:
		return http.StatusText(apiErr.StatusCode)
	}
}
