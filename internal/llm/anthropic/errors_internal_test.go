package anthropic

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{name: "none", header: http.Header{}, want: 0},
		{name: "seconds", header: http.Header{"Retry-After": {"7"}}, want: 7 * time.Second},
		{name: "fractional seconds", header: http.Header{"Retry-After": {"0.5"}}, want: 500 * time.Millisecond},
		{name: "milliseconds first", header: http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, want: 250 * time.Millisecond},
		{name: "HTTP date", header: http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, want: 30 * time.Second},
		{name: "date in the past", header: http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, want: 0},
		{name: "negative", header: http.Header{"Retry-After": {"-3"}}, want: 0},
		{name: "junk", header: http.Header{"Retry-After": {"soon"}}, want: 0},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, retryAfter(tt.header, now), tt.name)
	}
}

func TestClean(t *testing.T) {
	t.Parallel()
	require.Equal(t, "bad key [redacted].", clean("bad key sk-secret.", "sk-secret"))
	require.Equal(t, "no key here", clean("no key here", ""))
	long := clean(strings.Repeat("é", 400), "")
	require.LessOrEqual(t, len(long), maxMessage+len("…"))
	require.True(t, strings.HasSuffix(long, "…"))
	require.NotContains(t, long, "\uFFFD", "cut on a rune boundary")
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
}
