package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// tokenMargin is how long before its expiry a token is replaced (at most a
// quarter of its lifetime), so a request never leaves with a token that
// expires on the way.
const tokenMargin = 30 * time.Second

// tokenSource acquires and caches one binding's OAuth token. The grant is
// golang.org/x/oauth2's: the client authenticates with HTTP Basic
// (client_secret_basic) and, when the endpoint refuses that, once more
// with client_id and client_secret in the form body; the style that worked
// is remembered.
type tokenSource struct {
	cfg    clientcredentials.Config
	client *http.Client
	now    func() time.Time
	keep   func(string) // told every token, for redaction
	sem    chan struct{}

	// Guarded by sem.
	cached string
	expiry time.Time // zero: until refused
}

func newTokenSource(m *OAuth, client *http.Client, now func() time.Time, keep func(string)) *tokenSource {
	return &tokenSource{
		cfg: clientcredentials.Config{ClientID: m.ClientID, ClientSecret: m.ClientSecret, TokenURL: m.TokenURL,
			Scopes: strings.Fields(m.Scope), AuthStyle: oauth2.AuthStyleAutoDetect},
		client: client,
		now:    now,
		keep:   keep,
		sem:    make(chan struct{}, 1),
	}
}

// token returns the cached token, or acquires one. Concurrent callers wait
// for one acquisition.
func (s *tokenSource) token(ctx context.Context) (string, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-s.sem }()
	if s.cached != "" && (s.expiry.IsZero() || s.now().Before(s.expiry)) {
		return s.cached, nil
	}
	s.cached = ""
	t, err := s.cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, s.client))
	if err != nil {
		return "", describeTokenError(err)
	}
	if t.AccessToken == "" {
		return "", errors.New("the token endpoint answered without an access_token")
	}
	if typ := t.TokenType; typ != "" && !strings.EqualFold(typ, "bearer") {
		return "", fmt.Errorf("the token endpoint answered a %q token; only bearer tokens can be sent", typ)
	}
	s.keep(t.AccessToken)
	s.cached, s.expiry = t.AccessToken, time.Time{}
	if !t.Expiry.IsZero() {
		life := time.Until(t.Expiry)
		s.expiry = s.now().Add(life - min(tokenMargin, life/4))
	}
	return s.cached, nil
}

// invalidate drops the cached token, so the next request acquires another.
func (s *tokenSource) invalidate(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.cached = ""
	<-s.sem
	return nil
}

// describeTokenError says why a token request failed without the response
// body (which may echo what was sent).
func describeTokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := "an error"
		if re.Response != nil {
			status = "HTTP " + re.Response.Status
		}
		if re.ErrorCode != "" {
			return fmt.Errorf("the token endpoint answered %s (%s)", status, re.ErrorCode)
		}
		return fmt.Errorf("the token endpoint answered %s", status)
	}
	return fmt.Errorf("token request failed: %w", err)
}
