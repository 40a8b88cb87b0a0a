package auth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tokenServer is a local OAuth token endpoint for the client-credentials
// grant.
type tokenServer struct {
	srv          *httptest.Server
	clientID     string
	clientSecret string
	acceptBasic  bool
	acceptBody   bool
	expiresIn    int

	mu     sync.Mutex
	issued []string // tokens, in order
	styles []string // "basic" or "body" of each issue
	tries  int      // every request, refused ones too
	scope  string
	reject bool
}

func newTokenServer(t *testing.T, basic, body bool) *tokenServer {
	t.Helper()
	ts := &tokenServer{clientID: "client-1", clientSecret: "client-secret-xyz", acceptBasic: basic, acceptBody: body, expiresIn: 3600}
	ts.srv = httptest.NewServer(http.HandlerFunc(ts.serve))
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.tries++
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"unsupported_grant_type"}`))
		return
	}
	style := ""
	if id, secret, ok := r.BasicAuth(); ok && ts.acceptBasic && id == ts.clientID && secret == ts.clientSecret {
		style = "basic"
	} else if !ok && ts.acceptBody && r.PostForm.Get("client_id") == ts.clientID && r.PostForm.Get("client_secret") == ts.clientSecret {
		style = "body"
	}
	if style == "" || ts.reject {
		w.WriteHeader(http.StatusUnauthorized)
		// A careless endpoint that echoes what it was sent.
		_, _ = fmt.Fprintf(w, `{"error":"invalid_client","error_description":"bad secret %s"}`, r.PostForm.Get("client_secret"))
		return
	}
	ts.scope = r.PostForm.Get("scope")
	tok := fmt.Sprintf("access-token-%d", len(ts.issued)+1)
	ts.issued = append(ts.issued, tok)
	ts.styles = append(ts.styles, style)
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": ts.expiresIn})
}

func (ts *tokenServer) state() (issued, styles []string, tries int, scope string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.issued...), append([]string(nil), ts.styles...), ts.tries, ts.scope
}

func (ts *tokenServer) method() *OAuth {
	return &OAuth{ClientID: ts.clientID, ClientSecret: ts.clientSecret, TokenURL: ts.srv.URL + "/token?tenant=a", Scope: "read write"}
}

// clock is a test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// protectedSite serves /protected on every host: 200 (title "ok <token>")
// for a bearer token valid() accepts, else 401.
func protectedSite(t *testing.T, valid func(string) bool) *site {
	t.Helper()
	s := newSite(t)
	s.handle("/protected", func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !valid(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="test"`)
			html(w, http.StatusUnauthorized, `<!doctype html><title>unauthorized</title>`)
			return
		}
		html(w, http.StatusOK, `<!doctype html><title>ok `+tok+`</title>`)
	})
	return s
}

func TestOAuthTokenLazyCachedAndRefreshed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		basic, body bool
		style       string
		tries       int // token requests for the first token
	}{
		{"client_secret_basic", true, false, "basic", 1},
		{"body parameters after invalid_client", false, true, "body", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := newTokenServer(t, tc.basic, tc.body)
			s := protectedSite(t, func(string) bool { return true })
			clk := &clock{now: time.Now()}
			r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"api.test"}, Method: ts.method(), Credential: "oauth-app"}}},
				Options{HTTPClient: ts.srv.Client(), now: clk.Now})

			r.mustVisit(t, s.at("other.test", "/protected"))
			issued, _, tries, _ := ts.state()
			require.Empty(t, issued, "a token was acquired before a bound domain needed it")
			require.Zero(t, tries)

			r.mustVisit(t, s.at("api.test", "/protected"))
			issued, styles, tries, scope := ts.state()
			require.Equal(t, []string{"access-token-1"}, issued)
			require.Equal(t, []string{tc.style}, styles)
			require.Equal(t, tc.tries, tries)
			require.Equal(t, "read write", scope)
			require.Equal(t, "ok access-token-1", r.title(t))
			require.Empty(t, s.last(t, "other.test", "/protected").Header.Get("Authorization"))

			r.mustVisit(t, s.at("api.test", "/protected"))
			issued, _, tries, _ = ts.state()
			require.Len(t, issued, 1, "the cached token was not reused")
			require.Equal(t, tc.tries, tries)

			// Within the margin before expiry the token is replaced.
			clk.advance(time.Hour - 20*time.Second)
			r.mustVisit(t, s.at("api.test", "/protected"))
			issued, styles, tries, _ = ts.state()
			require.Equal(t, []string{"access-token-1", "access-token-2"}, issued)
			require.Equal(t, []string{tc.style, tc.style}, styles, "the working client authentication is remembered")
			require.Equal(t, tc.tries+1, tries)
			require.Equal(t, "ok access-token-2", r.title(t))

			require.Subset(t, r.auth.Redact(), []string{"client-secret-xyz", "access-token-1", "access-token-2"})
			require.Equal(t, []Applied{{Domain: "api.test", Method: KindOAuth, Credential: "oauth-app"}}, r.appliedEvents())
		})
	}
}

func TestOAuthTokenRefusedEndsTheRun(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, true, true)
	ts.reject = true
	s := protectedSite(t, func(string) bool { return true })
	r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"api.test"}, Method: ts.method(), Credential: "oauth-app"}}},
		Options{HTTPClient: ts.srv.Client()})

	_, err := r.visit(t, s.at("api.test", "/protected"))
	re := authError(t, err)
	require.Contains(t, re.Message, "invalid_client")
	require.Contains(t, re.Message, `credential "oauth-app"`)
	require.NotContains(t, re.Message, "tenant=a", "the token URL's query")
	requireNoSecret(t, re.Message, "client-secret-xyz")
	require.Len(t, r.failures(), 1)
	requireNoSecret(t, fmt.Sprint(r.failures()), "client-secret-xyz")
}
