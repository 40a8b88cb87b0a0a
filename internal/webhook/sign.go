package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery.
const (
	// HeaderID carries the delivery's ID (WebhookDelivery.id); a
	// redelivery has its own.
	HeaderID = "Webhook-Id"
	// HeaderTimestamp carries the attempt's time in unix seconds.
	HeaderTimestamp = "Webhook-Timestamp"
	// HeaderSignature carries "v1=" and the hex HMAC-SHA256 of the
	// timestamp, a dot and the body, keyed with the webhook's secret.
	HeaderSignature = "Webhook-Signature"
)

// Tolerance is the replay window receivers should enforce: a delivery
// whose timestamp is further than this from their clock is refused.
const Tolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("webhook: no v1 signature")
	ErrBadSignature = errors.New("webhook: signature does not match")
	ErrTimestamp    = errors.New("webhook: timestamp missing or outside the replay window")
)

// Sign returns the Webhook-Signature value of body sent at timestamp (unix
// seconds).
func Sign(secret string, timestamp int64, body []byte) string {
	return "v1=" + hex.EncodeToString(mac(secret, strconv.FormatInt(timestamp, 10), body))
}

func mac(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a delivery as a receiver should: its timestamp is within
// Tolerance of now, and one of the v1 signatures of its Webhook-Signature
// header (several may be given, separated by commas or spaces) is the
// HMAC-SHA256 of the timestamp, a dot and the body, keyed with secret. The
// comparison takes constant time.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	raw := h.Get(HeaderTimestamp)
	ts, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return ErrTimestamp
	}
	want := mac(secret, raw, body)
	found := false
	for _, sig := range strings.FieldsFunc(h.Get(HeaderSignature), func(r rune) bool { return r == ',' || r == ' ' }) {
		v, ok := strings.CutPrefix(sig, "v1=")
		if !ok {
			continue
		}
		found = true
		if got, err := hex.DecodeString(v); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	if !found {
		return ErrNoSignature
	}
	return ErrBadSignature
}
