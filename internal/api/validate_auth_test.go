package api

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// The secret values of these tests: none may appear in an error.
const (
	authSecretA = "s3cret-alpha"
	authSecretB = "s3cret-beta\r\nX-Injected: 1"
)

func withAuthBindings(bindings ...*wfv1.DomainAuthBinding) func(p *wfv1.RunParams) {
	return func(p *wfv1.RunParams) { p.Auth = &wfv1.AuthConfig{Bindings: bindings} }
}

func authBind(method any, domains ...string) *wfv1.DomainAuthBinding {
	if len(domains) == 0 {
		domains = []string{"app.example.com"}
	}
	b := &wfv1.DomainAuthBinding{Domains: domains}
	switch m := method.(type) {
	case *wfv1.BasicAuth:
		b.Method = &wfv1.DomainAuthBinding_Basic{Basic: m}
	case *wfv1.BearerAuth:
		b.Method = &wfv1.DomainAuthBinding_Bearer{Bearer: m}
	case *wfv1.ApiKeyAuth:
		b.Method = &wfv1.DomainAuthBinding_ApiKey{ApiKey: m}
	case *wfv1.OAuthClientCredentials:
		b.Method = &wfv1.DomainAuthBinding_OauthClientCredentials{OauthClientCredentials: m}
	case *wfv1.CookieAuth:
		b.Method = &wfv1.DomainAuthBinding_Cookie{Cookie: m}
	case *wfv1.LocalStorageAuth:
		b.Method = &wfv1.DomainAuthBinding_LocalStorage{LocalStorage: m}
	case *wfv1.AuthCallback:
		b.Method = &wfv1.DomainAuthBinding_CustomCallback{CustomCallback: m}
	case string:
		b.Credential = m
	}
	return b
}

func authCredential(b *wfv1.DomainAuthBinding, name string) *wfv1.DomainAuthBinding {
	b.Credential = name
	return b
}

func authScript(cred string, steps ...*wfv1.LoginStep) *wfv1.AuthCallback {
	return &wfv1.AuthCallback{Callback: &wfv1.AuthCallback_Script{Script: &wfv1.LoginScript{Steps: steps, Credential: cred}}}
}

func authWebhook(w *wfv1.CallbackWebhook) *wfv1.AuthCallback {
	return &wfv1.AuthCallback{Callback: &wfv1.AuthCallback_Webhook{Webhook: w}}
}

var authLoginSteps = []*wfv1.LoginStep{
	{Action: "navigate", Url: "https://app.example.com/login"},
	{Action: "fill", Selector: "#user", Value: "alice"},
	{Action: "fill", Selector: "#pass", SecretRef: "password"},
	{Action: "click", Selector: "button[type=submit]"},
	{Action: "press", Value: "Enter"},
	{Action: "wait_for", Selector: "#welcome"},
}

func TestValidateAuthValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(p *wfv1.RunParams)
		check func(t *testing.T, a *wfv1.AuthConfig)
	}{
		{name: "every method inline", edit: withAuthBindings(
			authBind(&wfv1.BasicAuth{Username: "alice", Password: authSecretA}, "app.example.com", "*.app.example.com"),
			authBind(&wfv1.BasicAuth{Username: "bob", Password: authSecretA, Strategy: wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_FORM_LOGIN}, "login.example.com"),
			authBind(&wfv1.BearerAuth{Token: authSecretA, HeaderName: "X-Token", Prefix: "Token"}, "api.example.com"),
			authBind(&wfv1.ApiKeyAuth{Key: authSecretA, Prefix: "Api-Key "}, "partner.example.com"),
			authBind(&wfv1.OAuthClientCredentials{ClientId: "c", ClientSecret: authSecretA, TokenUrl: "https://idp.example.com/token", Scope: "read write"}, "*.auth0.com"),
			authBind(&wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{Name: "sid", Value: authSecretA, Path: "/", Secure: true, Expires: timestamppb.New(time.Now())},
				{Name: "pref", Value: "x", Domain: ".example.com"}}}, "shop.example.com"),
			authBind(&wfv1.LocalStorageAuth{Origin: "http://127.0.0.1:8080", Entries: map[string]string{"token": authSecretA}}, "127.0.0.1"),
			authBind(authScript("sso", authLoginSteps...), "sso.example.com"),
			authBind(authWebhook(&wfv1.CallbackWebhook{Url: "https://hooks.example.com/login", Headers: map[string]string{"Authorization": authSecretA},
				Timeout: durationpb.New(5 * time.Minute)}), "mfa.example.com"),
			authBind(&wfv1.BearerAuth{Token: authSecretA}, "*"),
		), check: func(t *testing.T, a *wfv1.AuthConfig) {
			require.Equal(t, wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_HTTP_HEADER, a.Bindings[0].GetBasic().Strategy, "default strategy")
			require.Equal(t, 5*time.Minute, a.Bindings[8].GetCustomCallback().GetWebhook().Timeout.AsDuration())
		}},
		{name: "credential only", edit: withAuthBindings(authBind("app-login"), authBind("partner-key", "*"))},
		{name: "method filled from a credential", edit: withAuthBindings(
			authCredential(authBind(&wfv1.BasicAuth{}), "app-login"),
			authCredential(authBind(&wfv1.OAuthClientCredentials{Scope: "read"}), "idp"),
			authCredential(authBind(&wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{Name: "sid"}}}), "cookies"),
			authCredential(authBind(authScript("", authLoginSteps...)), "sso"),
		)},
		{name: "global callbacks", edit: func(p *wfv1.RunParams) {
			p.Auth = &wfv1.AuthConfig{GlobalCallback: authWebhook(&wfv1.CallbackWebhook{Url: "https://hooks.example.com/login"})}
		}, check: func(t *testing.T, a *wfv1.AuthConfig) {
			require.Equal(t, 60*time.Second, a.GlobalCallback.GetWebhook().Timeout.AsDuration(), "default timeout")
		}},
		{name: "global login script", edit: func(p *wfv1.RunParams) {
			p.Auth = &wfv1.AuthConfig{GlobalCallback: authScript("sso", authLoginSteps...)}
		}},
		{name: "empty", edit: func(p *wfv1.RunParams) { p.Auth = &wfv1.AuthConfig{} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := validateParams(validParams(tc.edit), testMaxRunTimeout)
			require.NoError(t, err)
			if tc.check != nil {
				tc.check(t, p.Auth)
			}
		})
	}
}

func TestValidateAuthErrors(t *testing.T) {
	t.Parallel()
	const b0 = "params.auth.bindings[0]"
	many := make([]*wfv1.DomainAuthBinding, maxAuthBindings+1)
	for i := range many {
		many[i] = authBind("cred")
	}
	global := func(cb *wfv1.AuthCallback) func(p *wfv1.RunParams) {
		return func(p *wfv1.RunParams) { p.Auth = &wfv1.AuthConfig{GlobalCallback: cb} }
	}
	steps := func(s ...*wfv1.LoginStep) func(p *wfv1.RunParams) {
		return withAuthBindings(authBind(authScript("sso", s...)))
	}
	hook := func(w *wfv1.CallbackWebhook) func(p *wfv1.RunParams) {
		return withAuthBindings(authBind(authWebhook(w)))
	}
	tests := []struct {
		name  string
		edit  func(p *wfv1.RunParams)
		field string
	}{
		{"too many bindings", withAuthBindings(many...), "params.auth.bindings"},
		{"no domains", withAuthBindings(&wfv1.DomainAuthBinding{Credential: "cred"}), b0 + ".domains"},
		{"bad domain pattern", withAuthBindings(authBind("cred", "example.com", "a.*.example.com")), b0 + ".domains[1]"},
		{"domain with a port", withAuthBindings(authBind("cred", "example.com:8080")), b0 + ".domains[0]"},
		{"neither method nor credential", withAuthBindings(&wfv1.DomainAuthBinding{Domains: []string{"example.com"}}), b0},
		{"bad credential name", withAuthBindings(authBind("Not A Name")), b0 + ".credential"},
		{"basic without password", withAuthBindings(authBind(&wfv1.BasicAuth{Username: "alice"})), b0 + ".basic.password"},
		{"basic header user with a colon", withAuthBindings(authBind(&wfv1.BasicAuth{Username: "a:b", Password: authSecretA})), b0 + ".basic.username"},
		{"basic unknown strategy", withAuthBindings(authBind(&wfv1.BasicAuth{Username: "a", Password: authSecretA, Strategy: 9})), b0 + ".basic.strategy"},
		{"bearer without token", withAuthBindings(authBind(&wfv1.BearerAuth{})), b0 + ".bearer.token"},
		{"bearer token with a line break", withAuthBindings(authBind(&wfv1.BearerAuth{Token: authSecretB})), b0 + ".bearer.token"},
		{"bearer bad header name", withAuthBindings(authBind(&wfv1.BearerAuth{Token: authSecretA, HeaderName: "X Token"})), b0 + ".bearer.header_name"},
		{"api key without key", withAuthBindings(authBind(&wfv1.ApiKeyAuth{HeaderName: "X-Key"})), b0 + ".api_key.key"},
		{"api key with a line break", withAuthBindings(authBind(&wfv1.ApiKeyAuth{Key: authSecretB})), b0 + ".api_key.key"},
		{"api key too long", withAuthBindings(authBind(&wfv1.ApiKeyAuth{Key: strings.Repeat("k", maxSecretLen+1)})), b0 + ".api_key.key"},
		{"oauth without secret", withAuthBindings(authBind(&wfv1.OAuthClientCredentials{ClientId: "c", TokenUrl: "https://idp.example.com/t"})), b0 + ".oauth_client_credentials.client_secret"},
		{"oauth relative token url", withAuthBindings(authBind(&wfv1.OAuthClientCredentials{ClientId: "c", ClientSecret: authSecretA, TokenUrl: "/token"})), b0 + ".oauth_client_credentials.token_url"},
		{"oauth token url with credentials", withAuthBindings(authBind(&wfv1.OAuthClientCredentials{ClientId: "c", ClientSecret: authSecretA, TokenUrl: "https://u:" + authSecretA + "@idp/t"})), b0 + ".oauth_client_credentials.token_url"},
		{"no cookies", withAuthBindings(authBind(&wfv1.CookieAuth{})), b0 + ".cookie.cookies"},
		{"cookie without name", withAuthBindings(authBind(&wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{Value: authSecretA}}})), b0 + ".cookie.cookies[0].name"},
		{"cookie name with a space", withAuthBindings(authBind(&wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{Name: "a b", Value: authSecretA}}})), b0 + ".cookie.cookies[0].name"},
		{"cookie without value", withAuthBindings(authBind(&wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{Name: "sid"}}})), b0 + ".cookie.cookies[0].value"},
		{"cookie value with a separator", withAuthBindings(authBind(&wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{Name: "sid", Value: authSecretA + ";x=1"}}})), b0 + ".cookie.cookies[0].value"},
		{"cookie for * without domain", withAuthBindings(authBind(&wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{Name: "sid", Value: authSecretA}}}, "*")), b0 + ".cookie.cookies[0].domain"},
		{"cookie wildcard domain", withAuthBindings(authBind(&wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{Name: "sid", Value: authSecretA, Domain: "*.example.com"}}})), b0 + ".cookie.cookies[0].domain"},
		{"cookie relative path", withAuthBindings(authBind(&wfv1.CookieAuth{Cookies: []*wfv1.Cookie{{Name: "sid", Value: authSecretA, Path: "app"}}})), b0 + ".cookie.cookies[0].path"},
		{"storage origin with a path", withAuthBindings(authBind(&wfv1.LocalStorageAuth{Origin: "https://app.example.com/home", Entries: map[string]string{"t": authSecretA}})), b0 + ".local_storage.origin"},
		{"storage without origin", withAuthBindings(authBind(&wfv1.LocalStorageAuth{Entries: map[string]string{"t": authSecretA}})), b0 + ".local_storage.origin"},
		{"storage without entries", withAuthBindings(authBind(&wfv1.LocalStorageAuth{Origin: "https://app.example.com"})), b0 + ".local_storage.entries"},
		{"empty callback", withAuthBindings(authBind(&wfv1.AuthCallback{})), b0 + ".custom_callback"},
		{"script without steps", steps(), b0 + ".custom_callback.script.steps"},
		{"script unknown action", steps(&wfv1.LoginStep{Action: "hover", Selector: "#a"}), b0 + ".custom_callback.script.steps[0].action"},
		{"fill without selector", steps(&wfv1.LoginStep{Action: "fill", Value: "alice"}), b0 + ".custom_callback.script.steps[0].selector"},
		{"fill with value and secret_ref", steps(&wfv1.LoginStep{Action: "fill", Selector: "#p", Value: authSecretA, SecretRef: "password"}), b0 + ".custom_callback.script.steps[0]"},
		{"click without selector", steps(&wfv1.LoginStep{Action: "click"}), b0 + ".custom_callback.script.steps[0].selector"},
		{"press without key", steps(&wfv1.LoginStep{Action: "press", Selector: "#p"}), b0 + ".custom_callback.script.steps[0].value"},
		{"navigate relative url", steps(&wfv1.LoginStep{Action: "navigate", Url: "/login"}), b0 + ".custom_callback.script.steps[0].url"},
		{"secret_ref without a credential", withAuthBindings(authBind(authScript("", &wfv1.LoginStep{Action: "fill", Selector: "#p", SecretRef: "password"}))),
			b0 + ".custom_callback.script.steps[0].secret_ref"},
		{"bad script credential name", withAuthBindings(authBind(authScript("Bad Name", authLoginSteps...))), b0 + ".custom_callback.script.credential"},
		{"webhook ftp url", hook(&wfv1.CallbackWebhook{Url: "ftp://hooks.example.com"}), b0 + ".custom_callback.webhook.url"},
		{"webhook timeout too long", hook(&wfv1.CallbackWebhook{Url: "https://h.example.com", Timeout: durationpb.New(10 * time.Minute)}), b0 + ".custom_callback.webhook.timeout"},
		{"webhook timeout too short", hook(&wfv1.CallbackWebhook{Url: "https://h.example.com", Timeout: durationpb.New(500 * time.Millisecond)}), b0 + ".custom_callback.webhook.timeout"},
		{"webhook header with a line break", hook(&wfv1.CallbackWebhook{Url: "https://h.example.com", Headers: map[string]string{"X-Secret": authSecretB}}), b0 + ".custom_callback.webhook.headers"},
		{"global secret_ref without a credential", global(authScript("", &wfv1.LoginStep{Action: "fill", Selector: "#p", SecretRef: "password"})),
			"params.auth.global_callback.script.steps[0].secret_ref"},
		{"global webhook without url", global(authWebhook(&wfv1.CallbackWebhook{})), "params.auth.global_callback.webhook.url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := validateParams(validParams(tc.edit), testMaxRunTimeout)
			require.ErrorIs(t, err, fault.ErrInvalidArgument)
			require.Equal(t, []string{tc.field}, violationFields(t, err))
			for _, s := range []string{authSecretA, authSecretB, "X-Injected"} {
				require.NotContains(t, err.Error(), s, "a secret value is quoted")
			}
		})
	}
}
