package auth

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHeaderMethodsOnlyOnTheirDomains(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	cases := []struct {
		name   string
		method Method
		header string
		want   string
	}{
		{"basic http header", &Basic{Username: "alice", Password: "pw-basic-1"}, "Authorization",
			"Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pw-basic-1"))},
		{"bearer with defaults", &Bearer{Token: "bearer-token-1"}, "Authorization", "Bearer bearer-token-1"},
		{"bearer with header and prefix", &Bearer{Token: "bearer-token-2", HeaderName: "X-Token", Prefix: "Token"}, "X-Token", "Token bearer-token-2"},
		{"api key with defaults", &APIKey{Key: "api-key-1"}, "X-API-Key", "api-key-1"},
		{"api key with prefix", &APIKey{Key: "api-key-2", HeaderName: "Authorization", Prefix: "Api-Key "}, "Authorization", "Api-Key api-key-2"},
	}
	for i, tc := range cases {
		page := fmt.Sprintf("/m%d/page", i)
		sub := fmt.Sprintf("/m%d/sub", i)
		landed := fmt.Sprintf("/m%d/landed", i)
		s.handle(fmt.Sprintf("/m%d/cross", i), func(w http.ResponseWriter, _ *http.Request) {
			html(w, http.StatusOK, fmt.Sprintf(`<!doctype html><script>fetch(%q, {mode: "no-cors"})</script>`, s.at("api.test", sub)))
		})
		s.handle(fmt.Sprintf("/m%d/away", i), func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, s.at("other.test", landed), http.StatusFound)
		})
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"api.test"}, Method: tc.method, Credential: "cred"}}}, Options{})

			r.mustVisit(t, s.at("api.test", page))
			require.Equal(t, tc.want, s.last(t, "api.test", page).Header.Get(tc.header), "navigation to the bound domain")

			r.mustVisit(t, s.at("other.test", page))
			require.Empty(t, s.last(t, "other.test", page).Header.Get(tc.header), "another origin")

			r.mustVisit(t, s.at("other.test", fmt.Sprintf("/m%d/cross", i)))
			require.Equal(t, tc.want, s.last(t, "api.test", sub).Header.Get(tc.header), "a subresource of another origin's page")

			r.mustVisit(t, s.at("api.test", fmt.Sprintf("/m%d/away", i)))
			require.Equal(t, tc.want, s.last(t, "api.test", fmt.Sprintf("/m%d/away", i)).Header.Get(tc.header))
			require.Empty(t, s.last(t, "other.test", landed).Header.Get(tc.header), "the redirect hop to another domain")

			require.Equal(t, []Applied{{Domain: "api.test", Method: tc.method.Kind(), Credential: "cred"}}, r.appliedEvents())
		})
	}
}

func TestFirstMatchingBindingWins(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	r := newRun(t, Config{Bindings: []Binding{
		{Domains: []string{"app.test"}, Method: &Cookies{Cookies: []Cookie{{Name: "sid", Value: "cookie-value-1"}}}},
		{Domains: []string{"api.test", "*.corp.test"}, Method: &Bearer{Token: "bearer-first"}},
		{Domains: []string{"api.test"}, Method: &Bearer{Token: "bearer-shadowed"}},
		{Domains: []string{"*"}, Method: &APIKey{Key: "fallback-key"}},
	}}, Options{})

	cases := []struct {
		host                  string
		authz, apiKey, cookie string
	}{
		{host: "app.test", cookie: "sid=cookie-value-1"},
		{host: "api.test", authz: "Bearer bearer-first"},
		{host: "x.corp.test", authz: "Bearer bearer-first"},
		{host: "corp.test", apiKey: "fallback-key"}, // "*.corp.test" is the subdomains only
		{host: "other.test", apiKey: "fallback-key"},
	}
	for _, tc := range cases {
		r.mustVisit(t, s.at(tc.host, "/first-match"))
		req := s.last(t, tc.host, "/first-match")
		require.Equal(t, tc.authz, req.Header.Get("Authorization"), tc.host)
		require.Equal(t, tc.apiKey, req.Header.Get("X-API-Key"), tc.host)
		require.Equal(t, tc.cookie, req.Header.Get("Cookie"), tc.host)
	}
}

func TestCookiesAndLocalStorage(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.handle("/report-page", func(w http.ResponseWriter, _ *http.Request) {
		html(w, http.StatusOK, `<!doctype html><title>report</title><script>
			fetch("/report?token=" + encodeURIComponent(localStorage.getItem("token")) +
				"&cookie=" + encodeURIComponent(document.cookie));
		</script>`)
	})
	r := newRun(t, Config{Bindings: []Binding{
		{Domains: []string{"app.test"}, Method: &Cookies{Cookies: []Cookie{{Name: "sid", Value: "cookie-secret-1"}}}},
		{Domains: []string{"*.corp.test"}, Method: &Cookies{Cookies: []Cookie{{Name: "corp", Value: "cookie-secret-2"}}}},
		{Domains: []string{"store.test"}, Method: &LocalStorage{Origin: s.at("store.test", ""), Entries: map[string]string{"token": "storage-secret-1"}}},
	}}, Options{})
	require.Empty(t, s.requests("store.test", "/"), "seeding localStorage reached the site")

	cases := []struct {
		host, token, cookie string
	}{
		{"app.test", "null", "sid=cookie-secret-1"},
		{"www.app.test", "null", ""}, // the default cookie is host-only
		{"x.corp.test", "null", "corp=cookie-secret-2"},
		{"corp.test", "null", "corp=cookie-secret-2"}, // a wildcard's default is a domain cookie of its parent
		{"store.test", "storage-secret-1", ""},
		{"other.test", "null", ""},
	}
	for _, tc := range cases {
		r.mustVisit(t, s.at(tc.host, "/report-page"))
		q := s.last(t, tc.host, "/report").URL.Query()
		require.Equal(t, tc.token, q.Get("token"), tc.host)
		require.Equal(t, tc.cookie, q.Get("cookie"), tc.host)
	}
	require.ElementsMatch(t, []Applied{
		{Domain: "app.test", Method: KindCookie},
		{Domain: "x.corp.test", Method: KindCookie},
		{Domain: "store.test", Method: KindLocalStorage},
	}, r.appliedEvents())
}
