package openai

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

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
}
