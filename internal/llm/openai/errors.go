package openai

import (
	"context"
	"errors"
	"net/http"
	"time"

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
		e.Class = llm.StatusClass(apiErr.StatusCode)
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
