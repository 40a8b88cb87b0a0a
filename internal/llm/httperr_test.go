package llm

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		require.Equal(t, tt.want, RetryAfter(tt.header, now), tt.name)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	require.Equal(t, "bad key [redacted].", Redact("bad key sk-secret.", "sk-secret"))
	require.Equal(t, "no key here", Redact("no key here", ""))
	long := Redact(strings.Repeat("é", 400), "")
	require.LessOrEqual(t, len(long), MaxErrorMessage+len("…"))
	require.True(t, strings.HasSuffix(long, "…"))
	require.NotContains(t, long, "\uFFFD", "cut on a rune boundary")
}
