package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/auth"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

// fakeCredentials is a tenant's stored credentials.
type fakeCredentials map[string]*store.OpenedCredential

func (f fakeCredentials) OpenCredential(_ context.Context, tenant, name string) (*store.OpenedCredential, error) {
	if tenant != "t1" {
		return nil, fmt.Errorf("credential %q: %w", name, fault.ErrNotFound)
	}
	oc, ok := f[name]
	if !ok {
		return nil, fmt.Errorf("credential %q: %w", name, fault.ErrNotFound)
	}
	return oc, nil
}

var testCredentials = fakeCredentials{
	"key":      {Name: "key", Type: wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, Values: map[string]string{"api_key": "k-secret"}},
	"key-hdr":  {Name: "key-hdr", Type: wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, Values: map[string]string{"api_key": "k-secret", "header_name": "X-Key", "prefix": ""}},
	"endpoint": {Name: "endpoint", Type: wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY_WITH_ENDPOINT, Values: map[string]string{"api_key": "e-secret", "endpoint": "https://api.test"}},
	"basic":    {Name: "basic", Type: wfv1.CredentialType_CREDENTIAL_TYPE_BASIC_AUTH, Values: map[string]string{"username": "alice", "password": "pw-secret"}},
	"oauth": {Name: "oauth", Type: wfv1.CredentialType_CREDENTIAL_TYPE_OAUTH2_CLIENT_CREDENTIALS, Values: map[string]string{
		"client_id": "cid", "client_secret": "cs-secret", "token_url": "https://idp.test/token", "scope": "read"}},
	"generic": {Name: "generic", Type: wfv1.CredentialType_CREDENTIAL_TYPE_GENERIC, Values: map[string]string{
		"key": "g-key", "sid": "g-cookie", "token": "g-storage", "x_hook_token": "g-hook", "username": "bob", "password": "pw-bob"}},
}

func binding(domain, credential string) *wfv1.DomainAuthBinding {
	return &wfv1.DomainAuthBinding{Domains: []string{domain}, Credential: credential}
}

func TestAuthConfigMapsCredentialTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		credential string
		want       auth.Method
	}{
		{"key", &auth.APIKey{Key: "k-secret", HeaderName: "Authorization", Prefix: "Bearer "}},
		{"key-hdr", &auth.APIKey{Key: "k-secret", HeaderName: "X-Key", Prefix: ""}},
		{"endpoint", &auth.Bearer{Token: "e-secret"}},
		{"basic", &auth.Basic{Username: "alice", Password: "pw-secret", FormLogin: true}},
		{"oauth", &auth.OAuth{ClientID: "cid", ClientSecret: "cs-secret", TokenURL: "https://idp.test/token", Scope: "read"}},
	}
	for _, tc := range cases {
		t.Run(tc.credential, func(t *testing.T) {
			t.Parallel()
			cfg, err := authConfig(context.Background(), testCredentials, "t1",
				&wfv1.AuthConfig{Bindings: []*wfv1.DomainAuthBinding{binding("app.test", tc.credential)}})
			require.NoError(t, err)
			require.Equal(t, []auth.Binding{{Domains: []string{"app.test"}, Method: tc.want, Credential: tc.credential}}, cfg.Bindings)
		})
	}
}

func TestAuthConfigRefusesUnusableCredentials(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tenant string
		ac     *wfv1.AuthConfig
		want   string
	}{
		{"missing", "t1", &wfv1.AuthConfig{Bindings: []*wfv1.DomainAuthBinding{binding("a.test", "basic"), binding("b.test", "nope")}},
			`auth binding 1: stored credential "nope" does not exist`},
		{"another tenant's", "t2", &wfv1.AuthConfig{Bindings: []*wfv1.DomainAuthBinding{binding("a.test", "basic")}},
			`stored credential "basic" does not exist`},
		{"generic without a method", "t1", &wfv1.AuthConfig{Bindings: []*wfv1.DomainAuthBinding{binding("a.test", "generic")}},
			`stored credential "generic" is of type CREDENTIAL_TYPE_GENERIC, which maps to no auth method`},
		{"login script's own credential", "t1", &wfv1.AuthConfig{GlobalCallback: &wfv1.AuthCallback{Callback: &wfv1.AuthCallback_Script{
			Script: &wfv1.LoginScript{Credential: "gone"}}}}, `auth global callback login script: stored credential "gone" does not exist`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := authConfig(context.Background(), testCredentials, tc.tenant, tc.ac)
			require.ErrorContains(t, err, tc.want)
			for _, oc := range testCredentials {
				for k, v := range oc.Values {
					if k != "prefix" {
						require.NotContains(t, err.Error(), v)
					}
				}
			}
		})
	}
}

func TestAuthConfigFillsExplicitMethods(t *testing.T) {
	t.Parallel()
	steps := []*wfv1.LoginStep{{Action: "fill", Selector: "#p", SecretRef: "password"}}
	ac := &wfv1.AuthConfig{
		Bindings: []*wfv1.DomainAuthBinding{
			{Domains: []string{"a.test"}, Credential: "basic", Method: &wfv1.DomainAuthBinding_Basic{Basic: &wfv1.BasicAuth{}}},
			{Domains: []string{"b.test"}, Credential: "generic", Method: &wfv1.DomainAuthBinding_ApiKey{ApiKey: &wfv1.ApiKeyAuth{HeaderName: "X-K"}}},
			{Domains: []string{"c.test"}, Credential: "generic", Method: &wfv1.DomainAuthBinding_Cookie{Cookie: &wfv1.CookieAuth{
				Cookies: []*wfv1.Cookie{{Name: "sid"}, {Name: "inline", Value: "given"}}}}},
			{Domains: []string{"d.test"}, Credential: "generic", Method: &wfv1.DomainAuthBinding_LocalStorage{LocalStorage: &wfv1.LocalStorageAuth{
				Origin: "https://d.test", Entries: map[string]string{"token": ""}}}},
			{Domains: []string{"e.test"}, Credential: "generic", Method: &wfv1.DomainAuthBinding_CustomCallback{CustomCallback: &wfv1.AuthCallback{
				Callback: &wfv1.AuthCallback_Script{Script: &wfv1.LoginScript{Steps: steps}}}}},
			{Domains: []string{"f.test"}, Credential: "generic", Method: &wfv1.DomainAuthBinding_CustomCallback{CustomCallback: &wfv1.AuthCallback{
				Callback: &wfv1.AuthCallback_Script{Script: &wfv1.LoginScript{Steps: steps, Credential: "basic"}}}}},
			{Domains: []string{"g.test"}, Credential: "generic", Method: &wfv1.DomainAuthBinding_CustomCallback{CustomCallback: &wfv1.AuthCallback{
				Callback: &wfv1.AuthCallback_Webhook{Webhook: &wfv1.CallbackWebhook{Url: "https://hook.test",
					Headers: map[string]string{"X-Hook-Token": ""}, Timeout: durationpb.New(90 * time.Second)}}}}},
			{Domains: []string{"h.test"}, Credential: "oauth", Method: &wfv1.DomainAuthBinding_OauthClientCredentials{
				OauthClientCredentials: &wfv1.OAuthClientCredentials{Scope: "admin"}}},
			{Domains: []string{"i.test"}, Method: &wfv1.DomainAuthBinding_Bearer{Bearer: &wfv1.BearerAuth{Token: "inline-token"}}},
		},
		GlobalCallback: &wfv1.AuthCallback{Callback: &wfv1.AuthCallback_Script{Script: &wfv1.LoginScript{Steps: steps, Credential: "basic"}}},
	}
	cfg, err := authConfig(context.Background(), testCredentials, "t1", ac)
	require.NoError(t, err)
	script := func(secrets map[string]string) *auth.Callback {
		return &auth.Callback{Script: &auth.Script{Steps: []auth.Step{{Action: "fill", Selector: "#p", SecretRef: "password"}}, Secrets: secrets}}
	}
	want := []auth.Method{
		&auth.Basic{Username: "alice", Password: "pw-secret"},
		&auth.APIKey{Key: "g-key", HeaderName: "X-K"},
		&auth.Cookies{Cookies: []auth.Cookie{{Name: "sid", Value: "g-cookie"}, {Name: "inline", Value: "given"}}},
		&auth.LocalStorage{Origin: "https://d.test", Entries: map[string]string{"token": "g-storage"}},
		script(testCredentials["generic"].Values),
		script(testCredentials["basic"].Values),
		&auth.Callback{Webhook: &auth.Webhook{URL: "https://hook.test", Headers: map[string]string{"X-Hook-Token": "g-hook"}, Timeout: 90 * time.Second}},
		&auth.OAuth{ClientID: "cid", ClientSecret: "cs-secret", TokenURL: "https://idp.test/token", Scope: "admin"},
		&auth.Bearer{Token: "inline-token"},
	}
	require.Len(t, cfg.Bindings, len(want))
	for i, m := range want {
		require.Equal(t, m, cfg.Bindings[i].Method, "binding %d", i)
		require.Equal(t, ac.Bindings[i].Credential, cfg.Bindings[i].Credential)
	}
	require.Equal(t, script(testCredentials["basic"].Values), cfg.Global)
	require.Equal(t, "basic", cfg.GlobalCredential)

	// The result is a valid auth configuration.
	_, err = auth.New(cfg, auth.Options{})
	require.NoError(t, err)
}

func TestAppliedMessage(t *testing.T) {
	t.Parallel()
	require.Equal(t, `auth applied: bearer for api.test with credential "k"`,
		appliedMessage(auth.Applied{Domain: "api.test", Method: auth.KindBearer, Credential: "k"}))
	require.Equal(t, "auth re-applied after HTTP 401/403: cookie for app.test",
		appliedMessage(auth.Applied{Domain: "app.test", Method: auth.KindCookie, Reauth: true}))
	require.Equal(t, "auth applied: login_script (global callback)", appliedMessage(auth.Applied{Method: auth.KindScript}))
}
