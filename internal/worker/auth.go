package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/auth"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
)

// authHooks applies the run's auth bindings: stored credentials resolved,
// headers, cookies and storage on every browser context, form-login
// placeholders for the model, every secret value to redact, and the hooks
// that run login callbacks and re-authenticate. A credential that is
// missing or cannot serve its binding ends the run (authentication_error).
func (w *Worker) authHooks(ctx context.Context, env *runEnv) (runner.Hooks, error) {
	ac := env.run.GetParams().GetAuth()
	if ac == nil {
		return nil, nil
	}
	var opener credentialOpener = noKeyring{}
	if w.cfg.Keyring != nil {
		opener = storeCredentials{w.cfg.Store, w.cfg.Keyring}
	}
	cfg, err := authConfig(ctx, opener, env.tenant, ac)
	if err != nil {
		var ce *credentialError
		if errors.As(err, &ce) {
			env.audit(ctx, store.Audit{Kind: store.AuditAuthFailed, Subject: ce.name, Details: map[string]any{"reason": ce.reason}})
		}
		return nil, &runner.Error{Category: runner.CategoryAuthentication, Message: err.Error()}
	}
	bc := env.run.GetParams().GetBrowser()
	var a *auth.Auth
	a, err = auth.New(cfg, auth.Options{
		RunID:             env.run.GetId(),
		HTTPClient:        w.cfg.Egress,
		CDPListenHost:     w.cfg.CallbackHost,
		CDPAdvertiseHost:  w.cfg.CallbackHost,
		NavigationTimeout: bc.GetNavigationTimeout().AsDuration(),
		StepTimeout:       bc.GetActionTimeout().AsDuration(),
		Logger:            env.log,
		OnApplied: func(ctx context.Context, ap auth.Applied) {
			// An OAuth token acquired on the way is a secret too.
			env.learn(a.Redact()...)
			env.event(ctx, &wfv1.RunEvent{Type: wfv1.RunEventType_RUN_EVENT_TYPE_AUTH_APPLIED,
				Status: wfv1.RunStatus_RUN_STATUS_RUNNING, Message: appliedMessage(ap)})
			if ap.Credential != "" {
				env.audit(ctx, store.Audit{Kind: store.AuditCredentialUsed, Subject: ap.Credential,
					Details: map[string]any{"domain": ap.Domain, "method": ap.Method, "reauth": ap.Reauth}})
			}
		},
		OnFailed: func(ctx context.Context, f auth.Failure) {
			env.audit(ctx, store.Audit{Kind: store.AuditAuthFailed, Subject: f.Credential,
				Details: map[string]any{"domain": f.Domain, "method": f.Method, "reason": f.Reason}})
		},
	})
	if err != nil {
		// The API validated the inline values; a stored credential's
		// fields can still be missing.
		return nil, &runner.Error{Category: runner.CategoryAuthentication, Message: "auth: " + err.Error()}
	}
	a.NetworkRules(&env.b.rules)
	env.secrets = append(env.secrets, a.Secrets()...)
	env.redact = append(env.redact, a.Redact()...)
	return a, nil
}

// appliedMessage is an AUTH_APPLIED event's summary: method, domain and
// credential, never a value.
func appliedMessage(ap auth.Applied) string {
	s := "auth applied: " + ap.Method
	if ap.Reauth {
		s = "auth re-applied after HTTP 401/403: " + ap.Method
	}
	if ap.Domain != "" {
		s += " for " + ap.Domain
	} else {
		s += " (global callback)"
	}
	if ap.Credential != "" {
		s += fmt.Sprintf(" with credential %q", ap.Credential)
	}
	return s
}

// credentialOpener opens a tenant's stored credentials.
type credentialOpener interface {
	OpenCredential(ctx context.Context, tenant, name string) (*store.OpenedCredential, error)
}

type storeCredentials struct {
	s  *store.Store
	kr *secrets.Keyring
}

func (o storeCredentials) OpenCredential(ctx context.Context, tenant, name string) (*store.OpenedCredential, error) {
	return o.s.OpenCredential(ctx, o.kr, tenant, name)
}

type noKeyring struct{}

func (noKeyring) OpenCredential(context.Context, string, string) (*store.OpenedCredential, error) {
	return nil, errors.New("the server has no encryption key")
}

// credentialError is a stored credential that cannot serve a binding.
type credentialError struct {
	where, name, reason string
}

func (e *credentialError) Error() string {
	return fmt.Sprintf("%s: stored credential %q %s", e.where, e.name, e.reason)
}

// credentials opens each named credential once.
type credentials struct {
	ctx    context.Context
	opener credentialOpener
	tenant string
	opened map[string]*store.OpenedCredential
}

func (c *credentials) open(where, name string) (*store.OpenedCredential, error) {
	if oc, ok := c.opened[name]; ok {
		return oc, nil
	}
	oc, err := c.opener.OpenCredential(c.ctx, c.tenant, name)
	switch {
	case errors.Is(err, fault.ErrNotFound):
		return nil, &credentialError{where, name, "does not exist"}
	case err != nil:
		// Store errors name the credential and the cause, never a value.
		return nil, &credentialError{where, name, "cannot be opened: " + err.Error()}
	}
	c.opened[name] = oc
	return oc, nil
}

// authConfig converts the run's auth params into auth.Config, resolving
// stored credentials (seed 000 §3.3): a binding with only a credential
// gets the method of its type; a binding with both has its method's empty
// fields filled from the credential's same-named fields.
func authConfig(ctx context.Context, opener credentialOpener, tenant string, ac *wfv1.AuthConfig) (auth.Config, error) {
	creds := &credentials{ctx: ctx, opener: opener, tenant: tenant, opened: map[string]*store.OpenedCredential{}}
	var cfg auth.Config
	for i, b := range ac.GetBindings() {
		where := fmt.Sprintf("auth binding %d", i)
		var values map[string]string
		if name := b.GetCredential(); name != "" {
			oc, err := creds.open(where, name)
			if err != nil {
				return auth.Config{}, err
			}
			values = oc.Values
			if b.GetMethod() == nil {
				m, err := credentialMethod(oc)
				if err != nil {
					return auth.Config{}, &credentialError{where, name, err.Error()}
				}
				cfg.Bindings = append(cfg.Bindings, auth.Binding{Domains: b.GetDomains(), Method: m, Credential: name})
				continue
			}
		}
		m, err := bindingMethod(creds, where, b, values)
		if err != nil {
			return auth.Config{}, err
		}
		cfg.Bindings = append(cfg.Bindings, auth.Binding{Domains: b.GetDomains(), Method: m, Credential: b.GetCredential()})
	}
	if g := ac.GetGlobalCallback(); g != nil {
		cb, err := callback(creds, "auth global callback", g, "", nil)
		if err != nil {
			return auth.Config{}, err
		}
		cfg.Global = cb
		cfg.GlobalCredential = g.GetScript().GetCredential()
	}
	return cfg, nil
}

// credentialMethod is the method of a credential's type.
func credentialMethod(oc *store.OpenedCredential) (auth.Method, error) {
	v := oc.Values
	or := func(field, def string) string {
		if s, ok := v[field]; ok {
			return s
		}
		return def
	}
	switch oc.Type {
	case wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY:
		return &auth.APIKey{Key: v["api_key"], HeaderName: or("header_name", "Authorization"), Prefix: or("prefix", "Bearer ")}, nil
	case wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY_WITH_ENDPOINT:
		return &auth.Bearer{Token: v["api_key"]}, nil
	case wfv1.CredentialType_CREDENTIAL_TYPE_BASIC_AUTH:
		return &auth.Basic{Username: v["username"], Password: v["password"], FormLogin: true}, nil
	case wfv1.CredentialType_CREDENTIAL_TYPE_OAUTH2_CLIENT_CREDENTIALS:
		return &auth.OAuth{ClientID: v["client_id"], ClientSecret: v["client_secret"], TokenURL: v["token_url"], Scope: v["scope"]}, nil
	}
	return nil, fmt.Errorf("is of type %s, which maps to no auth method; name a method whose empty fields it fills",
		oc.Type.String())
}

// fill sets *dst from the first of fields the credential has, when *dst
// is empty. A field is looked up as named and as a credential field name
// ("X-Hook-Token": "x_hook_token").
func fill(dst *string, values map[string]string, fields ...string) {
	if *dst != "" {
		return
	}
	for _, f := range fields {
		for _, name := range []string{f, fieldName(f)} {
			if v, ok := values[name]; ok && v != "" {
				*dst = v
				return
			}
		}
	}
}

// fieldName is name as a credential field name: lower case, every
// character but [a-z0-9_] an underscore.
func fieldName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, name)
}

// bindingMethod converts a binding's explicit method, its empty fields
// filled from values (the binding's credential; nil for none).
func bindingMethod(creds *credentials, where string, b *wfv1.DomainAuthBinding, values map[string]string) (auth.Method, error) {
	switch {
	case b.GetBasic() != nil:
		p := b.GetBasic()
		m := &auth.Basic{Username: p.GetUsername(), Password: p.GetPassword(),
			FormLogin: p.GetStrategy() == wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_FORM_LOGIN}
		fill(&m.Username, values, "username")
		fill(&m.Password, values, "password")
		return m, nil
	case b.GetBearer() != nil:
		p := b.GetBearer()
		m := &auth.Bearer{Token: p.GetToken(), HeaderName: p.GetHeaderName(), Prefix: p.GetPrefix()}
		fill(&m.Token, values, "token", "api_key")
		fill(&m.HeaderName, values, "header_name")
		fill(&m.Prefix, values, "prefix")
		return m, nil
	case b.GetApiKey() != nil:
		p := b.GetApiKey()
		m := &auth.APIKey{Key: p.GetKey(), HeaderName: p.GetHeaderName(), Prefix: p.GetPrefix()}
		fill(&m.Key, values, "key", "api_key")
		fill(&m.HeaderName, values, "header_name")
		fill(&m.Prefix, values, "prefix")
		return m, nil
	case b.GetOauthClientCredentials() != nil:
		p := b.GetOauthClientCredentials()
		m := &auth.OAuth{ClientID: p.GetClientId(), ClientSecret: p.GetClientSecret(), TokenURL: p.GetTokenUrl(), Scope: p.GetScope()}
		fill(&m.ClientID, values, "client_id")
		fill(&m.ClientSecret, values, "client_secret")
		fill(&m.TokenURL, values, "token_url")
		fill(&m.Scope, values, "scope")
		return m, nil
	case b.GetCookie() != nil:
		m := &auth.Cookies{}
		for _, c := range b.GetCookie().GetCookies() {
			ck := auth.Cookie{Name: c.GetName(), Value: c.GetValue(), Domain: c.GetDomain(), Path: c.GetPath(),
				Secure: c.GetSecure(), HTTPOnly: c.GetHttpOnly()}
			if e := c.GetExpires(); e != nil {
				ck.Expires = e.AsTime()
			}
			fill(&ck.Value, values, c.GetName())
			m.Cookies = append(m.Cookies, ck)
		}
		return m, nil
	case b.GetLocalStorage() != nil:
		p := b.GetLocalStorage()
		m := &auth.LocalStorage{Origin: p.GetOrigin(), Entries: make(map[string]string, len(p.GetEntries()))}
		for k, v := range p.GetEntries() {
			fill(&v, values, k)
			m.Entries[k] = v
		}
		return m, nil
	case b.GetCustomCallback() != nil:
		return callback(creds, where, b.GetCustomCallback(), b.GetCredential(), values)
	}
	return nil, fmt.Errorf("%s: no method and no credential", where)
}

// callback converts a login callback. A script's secret references are
// the fields of its own credential, else of the binding's (values).
func callback(creds *credentials, where string, cb *wfv1.AuthCallback, bindingCredential string, values map[string]string) (*auth.Callback, error) {
	if w := cb.GetWebhook(); w != nil {
		m := &auth.Webhook{URL: w.GetUrl(), Headers: make(map[string]string, len(w.GetHeaders()))}
		for k, v := range w.GetHeaders() {
			fill(&v, values, k)
			m.Headers[k] = v
		}
		if d := w.GetTimeout(); d != nil {
			m.Timeout = d.AsDuration()
		}
		return &auth.Callback{Webhook: m}, nil
	}
	s := cb.GetScript()
	secrets := values
	if name := s.GetCredential(); name != "" && name != bindingCredential {
		oc, err := creds.open(where+" login script", name)
		if err != nil {
			return nil, err
		}
		secrets = oc.Values
	}
	m := &auth.Script{Secrets: secrets}
	for _, st := range s.GetSteps() {
		m.Steps = append(m.Steps, auth.Step{Action: st.GetAction(), URL: st.GetUrl(), Selector: st.GetSelector(),
			Value: st.GetValue(), SecretRef: st.GetSecretRef()})
	}
	return &auth.Callback{Script: m}, nil
}
