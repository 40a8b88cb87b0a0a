package webhook_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/webhook"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	const secret = "whsec-0123456789abcdef"
	body := []byte(`{"event":"run.finished"}`)
	now := time.Unix(1_800_000_000, 0)
	headers := func(ts int64, sig string) http.Header {
		h := http.Header{}
		h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
		if sig != "" {
			h.Set(webhook.HeaderSignature, sig)
		}
		return h
	}
	ts := now.Unix()
	good := webhook.Sign(secret, ts, body)
	require.Regexp(t, `^v1=[0-9a-f]{64}$`, good)
	for _, tc := range []struct {
		name string
		h    http.Header
		body []byte
		want error
	}{
		{"valid", headers(ts, good), body, nil},
		{"clock skew within the window", headers(ts-299, webhook.Sign(secret, ts-299, body)), body, nil},
		{"one of several signatures", headers(ts, "v1=00ff, "+good), body, nil},
		{"tampered body", headers(ts, good), []byte(`{"event":"run.finishe"}`), webhook.ErrBadSignature},
		{"another secret", headers(ts, webhook.Sign("another-secret-value", ts, body)), body, webhook.ErrBadSignature},
		{"timestamp changed", headers(ts+1, good), body, webhook.ErrBadSignature},
		{"replayed too late", headers(ts-301, webhook.Sign(secret, ts-301, body)), body, webhook.ErrTimestamp},
		{"from the future", headers(ts+301, webhook.Sign(secret, ts+301, body)), body, webhook.ErrTimestamp},
		{"no timestamp", http.Header{webhook.HeaderSignature: {good}}, body, webhook.ErrTimestamp},
		{"no signature", headers(ts, ""), body, webhook.ErrNoSignature},
		{"other scheme only", headers(ts, "v0=abcd"), body, webhook.ErrNoSignature},
		{"not hex", headers(ts, "v1=zz"), body, webhook.ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := webhook.Verify(secret, tc.h, tc.body, now)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	var total time.Duration
	for attempt := 1; attempt < 8; attempt++ {
		d := webhook.RetryDelay(attempt)
		require.Greater(t, d, time.Duration(0))
		if attempt > 1 {
			require.GreaterOrEqual(t, d, webhook.RetryDelay(attempt-1), "attempt %d", attempt)
		}
		total += d
	}
	require.InDelta(t, time.Hour.Seconds(), total.Seconds(), (10 * time.Minute).Seconds(), "8 attempts span about an hour")
	require.Equal(t, webhook.RetryDelay(7), webhook.RetryDelay(100))
}
