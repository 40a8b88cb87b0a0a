package auth

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReauthAfter401GetsANewOAuthToken(t *testing.T) {
	t.Parallel()
	ts := newTokenServer(t, true, false)
	var mu sync.Mutex
	revoked := map[string]bool{}
	s := protectedSite(t, func(tok string) bool {
		mu.Lock()
		defer mu.Unlock()
		return !revoked[tok]
	})
	r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"api.test"}, Method: ts.method(), Credential: "oauth-app"}}},
		Options{HTTPClient: ts.srv.Client()})

	hr := r.mustVisit(t, s.at("api.test", "/protected"))
	require.False(t, hr.Changed)
	require.Equal(t, "ok access-token-1", r.title(t))

	// The site revokes the token long before it expires.
	mu.Lock()
	revoked["access-token-1"] = true
	mu.Unlock()
	hr = r.mustVisit(t, s.at("api.test", "/protected"))
	require.True(t, hr.Changed)
	require.True(t, contains(hr.Notes, "HTTP 401"), "notes: %v", hr.Notes)
	require.Equal(t, "ok access-token-2", r.title(t))
	issued, _, _, _ := ts.state()
	require.Equal(t, []string{"access-token-1", "access-token-2"}, issued)
	require.Contains(t, r.appliedEvents(), Applied{Domain: "api.test", Method: KindOAuth, Credential: "oauth-app", Reauth: true})
	require.Empty(t, r.failures())

	// Once re-authenticated, the host's next refusal ends the run.
	mu.Lock()
	revoked["access-token-2"] = true
	mu.Unlock()
	_, err := r.visit(t, s.at("api.test", "/protected"))
	re := authError(t, err)
	require.Contains(t, re.Message, "HTTP 401 again")
	requireNoSecret(t, re.Message, "access-token-2", "client-secret-xyz")
}

func TestSecond401EndsTheRun(t *testing.T) {
	t.Parallel()
	s := protectedSite(t, func(tok string) bool { return tok == "the-right-token" })
	s.handle("/forbidden", func(w http.ResponseWriter, _ *http.Request) {
		html(w, http.StatusForbidden, `<!doctype html><title>forbidden</title>`)
	})
	cases := []struct {
		name   string
		path   string
		method Method
		status string
	}{
		{"bearer 401", "/protected", &Bearer{Token: "a-wrong-token"}, "HTTP 401"},
		{"api key 403", "/forbidden", &APIKey{Key: "a-wrong-key"}, "HTTP 403"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"api.test"}, Method: tc.method, Credential: "wrong"}}}, Options{})
			before := len(s.requests("api.test", tc.path))
			_, err := r.visit(t, s.at("api.test", tc.path))
			re := authError(t, err)
			require.Contains(t, re.Message, tc.status+" again")
			require.Contains(t, re.Message, "api.test")
			require.Contains(t, re.Message, `credential "wrong"`)
			requireNoSecret(t, re.Message, "a-wrong-token", "a-wrong-key")
			require.Len(t, s.requests("api.test", tc.path), before+2, "one reload, not more")
			f := r.failures()
			require.Len(t, f, 1)
			require.Equal(t, "api.test", f[0].Domain)
			require.Equal(t, tc.method.Kind(), f[0].Method)
		})
	}
}

func TestReauthStoresCookiesAgain(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.handle("/account", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("sid"); err != nil || c.Value != "cookie-session-1" {
			html(w, http.StatusUnauthorized, `<!doctype html><title>signed out</title>`)
			return
		}
		html(w, http.StatusOK, `<!doctype html><title>account</title>`)
	})
	// The site's sign-out drops the cookie.
	s.handle("/sign-out", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "", Path: "/", MaxAge: -1})
		html(w, http.StatusOK, `<!doctype html><title>bye</title>`)
	})
	r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"app.test"},
		Method: &Cookies{Cookies: []Cookie{{Name: "sid", Value: "cookie-session-1"}}}}}}, Options{})

	r.mustVisit(t, s.at("app.test", "/account"))
	require.Equal(t, "account", r.title(t))
	r.mustVisit(t, s.at("app.test", "/sign-out"))
	hr := r.mustVisit(t, s.at("app.test", "/account"))
	require.True(t, hr.Changed)
	require.Equal(t, "account", r.title(t))
	require.Len(t, s.requests("app.test", "/account"), 3)
	require.True(t, contains(hr.Notes, "HTTP 401"), "notes: %v", hr.Notes)
}
