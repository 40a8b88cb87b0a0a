package auth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/runner"
)

func TestNewRefusesInvalidConfig(t *testing.T) {
	t.Parallel()
	one := func(domains []string, m Method) Config {
		return Config{Bindings: []Binding{{Domains: domains, Method: m}}}
	}
	app := []string{"app.test"}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no domains", one(nil, &Bearer{Token: "secret-token"}), "bindings[0]: at least one domain"},
		{"bad pattern", one([]string{"a.*.test"}, &Bearer{Token: "secret-token"}), "bindings[0]"},
		{"no method", one(app, nil), "a method is required"},
		{"basic without password", one(app, &Basic{Username: "u"}), "basic_http_header: username and password"},
		{"basic header user with colon", one(app, &Basic{Username: "a:b", Password: "secret-pw"}), "cannot contain ':'"},
		{"bearer without token", one(app, &Bearer{}), "a token is required"},
		{"api key without key", one(app, &APIKey{HeaderName: "X-Key"}), "a key is required"},
		{"oauth without secret", one(app, &OAuth{ClientID: "c", TokenURL: "https://t/"}), "client_id and client_secret"},
		{"oauth relative token url", one(app, &OAuth{ClientID: "c", ClientSecret: "secret-cs", TokenURL: "/token"}), "token_url must be"},
		{"cookie without name", one(app, &Cookies{Cookies: []Cookie{{Value: "secret-cookie"}}}), "cookies[0]: a name"},
		{"cookie for * without domain", one([]string{"*"}, &Cookies{Cookies: []Cookie{{Name: "a", Value: "secret-cookie"}}}), "a domain is required"},
		{"storage origin with a path", one(app, &LocalStorage{Origin: "https://app.test/x", Entries: map[string]string{"k": "secret-v"}}), "origin must be"},
		{"callback with both", one(app, &Callback{Script: &Script{}, Webhook: &Webhook{}}), "exactly one"},
		{"script step unknown", one(app, &Callback{Script: &Script{Steps: []Step{{Action: "hover"}}}}), `steps[0]: unknown action "hover"`},
		{"script fill without selector", one(app, &Callback{Script: &Script{Steps: []Step{{Action: StepFill, Value: "secret-fill"}}}}), "fill needs a selector"},
		{"script unknown secret", one(app, &Callback{Script: &Script{Steps: []Step{{Action: StepFill, Selector: "#p", SecretRef: "pin"}}}}), `secret_ref "pin"`},
		{"webhook timeout", one(app, &Callback{Webhook: &Webhook{URL: "https://hook.test/", Timeout: 10 * time.Minute}}), "timeout must be between"},
		{"global webhook url", Config{Global: &Callback{Webhook: &Webhook{URL: "ftp://x"}}}, "global_callback: url must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg, Options{})
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			requireNoSecret(t, err.Error(), "secret-token", "secret-pw", "secret-cs", "secret-cookie", "secret-v", "secret-fill")
		})
	}
}

func TestFormLoginSecrets(t *testing.T) {
	t.Parallel()
	form := func(user, pw string) *Basic { return &Basic{Username: user, Password: pw, FormLogin: true} }
	a, err := New(Config{Bindings: []Binding{
		{Domains: []string{"api.test"}, Method: &Bearer{Token: "token-1"}},
		{Domains: []string{"app.test", "*.app.test"}, Method: form("alice", "pw-alice")},
	}}, Options{})
	require.NoError(t, err)
	require.Equal(t, []runner.Secret{
		{Name: "username", Value: "alice", Domains: []string{"app.test", "*.app.test"}, Hint: "login for app.test, *.app.test (username)"},
		{Name: "password", Value: "pw-alice", Domains: []string{"app.test", "*.app.test"}, Hint: "login for app.test, *.app.test (password)"},
	}, a.Secrets())

	a, err = New(Config{Bindings: []Binding{
		{Domains: []string{"*.App.test"}, Method: form("alice", "pw-alice")},
		{Domains: []string{"admin.test"}, Method: form("root", "pw-root")},
		{Domains: []string{"app.test"}, Method: form("bob", "pw-bob")}, // same name as the first
		{Domains: []string{"*"}, Method: form("guest", "pw-guest")},
	}}, Options{})
	require.NoError(t, err)
	var names []string
	for _, s := range a.Secrets() {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"app.test.username", "app.test.password", "admin.test.username", "admin.test.password",
		"login3.username", "login3.password", "any.username", "any.password"}, names)
	require.Subset(t, a.Redact(), []string{"pw-alice", "pw-root", "pw-bob", "pw-guest"})
}

func TestNetworkRulesOfBindings(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Bindings: []Binding{
		{Domains: []string{"app.test"}, Method: &Basic{Username: "u", Password: "pw-form", FormLogin: true}},
		{Domains: []string{"api.test", "*.api.test"}, Method: &Bearer{Token: "token-1"}},
		{Domains: []string{"*.corp.test"}, Method: &Cookies{Cookies: []Cookie{
			{Name: "a", Value: "cookie-a"},
			{Name: "b", Value: "cookie-b", Domain: "x.corp.test", Path: "/p", Secure: true, HTTPOnly: true},
		}}},
		{Domains: []string{"*.shop.test", "shop.test"}, Method: &Cookies{Cookies: []Cookie{{Name: "c", Value: "cookie-c", Secure: true}}}},
		{Domains: []string{"127.0.0.2"}, Method: &LocalStorage{Origin: "http://127.0.0.2:8080", Entries: map[string]string{"k": "v-storage"}}},
	}}, Options{})
	require.NoError(t, err)
	var r browser.NetworkRules
	a.NetworkRules(&r)
	require.Len(t, r.Headers, 1)
	require.Equal(t, []string{"api.test", "*.api.test"}, r.Headers[0].Domains)
	require.NotNil(t, r.Headers[0].Func)
	require.Empty(t, r.Headers[0].Headers, "header values are decided per request")
	require.Equal(t, []browser.NetworkCookie{
		{Name: "a", Value: "cookie-a", Domain: "corp.test"},
		{Name: "b", Value: "cookie-b", Domain: "x.corp.test", Path: "/p", Secure: true, HTTPOnly: true},
		{Name: "c", Value: "cookie-c", URL: "https://shop.test/", Secure: true},
	}, r.Cookies)
	require.Equal(t, []browser.OriginStorage{{Origin: "http://127.0.0.2:8080", Items: map[string]string{"k": "v-storage"}}}, r.LocalStorage)
	require.NotNil(t, r.OnDocument)
	require.Equal(t, []string{"api.test", "*.api.test", "*.corp.test", "*.shop.test", "shop.test", "127.0.0.2"}, r.DocumentDomains,
		"form-login domains are not re-authenticated")
	require.Subset(t, a.Redact(), []string{"pw-form", "token-1", "cookie-a", "cookie-b", "cookie-c", "v-storage"})
}
