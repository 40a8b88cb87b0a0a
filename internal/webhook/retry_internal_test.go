package webhook

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		status int
		value  string
		want   time.Duration
	}{
		{"seconds on 503", http.StatusServiceUnavailable, "120", 2 * time.Minute},
		{"seconds on 429", http.StatusTooManyRequests, " 7 ", 7 * time.Second},
		{"HTTP date", http.StatusServiceUnavailable, now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"past date", http.StatusServiceUnavailable, now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"capped", http.StatusTooManyRequests, "86400", MaxRetryAfter},
		{"negative", http.StatusTooManyRequests, "-5", 0},
		{"garbage", http.StatusTooManyRequests, "soon", 0},
		{"absent", http.StatusTooManyRequests, "", 0},
		{"other status", http.StatusInternalServerError, "120", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: c.status, Header: http.Header{}}
			if c.value != "" {
				resp.Header.Set("Retry-After", c.value)
			}
			require.Equal(t, c.want, retryAfter(resp, now))
		})
	}
}
