package gemini

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/wayfinder/wayfinder/internal/llm"
)

func TestClassifyAPIErrors(t *testing.T) {
	t.Parallel()
	m := &model{apiKey: "AIza-secret"}
	tests := []struct {
		name  string
		err   genai.APIError
		class error
		wait  time.Duration
	}{
		{name: "key invalid by reason", class: llm.ErrAuth, err: genai.APIError{Code: 400, Status: "INVALID_ARGUMENT",
			Message: "bad AIza-secret", Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}}}},
		{name: "rate limited with RetryInfo", class: llm.ErrRateLimited, wait: 13500 * time.Millisecond, err: genai.APIError{Code: 429,
			Status: "RESOURCE_EXHAUSTED", Details: []map[string]any{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13.5s"}}}},
		{name: "plain 400", class: llm.ErrInvalidRequest, err: genai.APIError{Code: 400, Status: "INVALID_ARGUMENT", Message: "AIza-secret is odd"}},
	}
	for _, tt := range tests {
		err := m.classify(context.Background(), fmt.Errorf("wrapped: %w", tt.err))
		require.ErrorIs(t, err, tt.class, tt.name)
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, tt.wait, e.RetryAfter, tt.name)
		require.NotContains(t, err.Error(), "AIza-secret", tt.name)
	}
}

// A 200 that is not the API's JSON (a proxy's page) is an answer that
// cannot be understood.
func TestNotJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("<html>captive portal</html>"))
	}))
	t.Cleanup(srv.Close)
	m, err := New(llm.Settings{BaseURL: srv.URL, APIKey: "k"})
	require.NoError(t, err)
	_, err = m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Text: "Hi."}}}}})
	require.ErrorIs(t, err, llm.ErrUnparseable)
	require.NotContains(t, err.Error(), "captive")
}
