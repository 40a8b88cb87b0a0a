package api

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/guard"
)

// Limits of auth parameters.
const (
	maxAuthBindings        = 32
	maxCookies             = 50
	maxStorageEntries      = 100
	maxStorageKeyLen       = 1024
	maxSecretLen           = 16 << 10
	maxLoginSteps          = 50
	maxSelectorLen         = 1000
	maxSecretRefLen        = 64
	minCallbackTimeout     = time.Second
	maxCallbackTimeout     = 5 * time.Minute
	defaultCallbackTimeout = 60 * time.Second
)

// validateAuth checks params.auth field by field and fills its defaults
// (basic strategy, webhook timeouts). A secret value is never quoted in a
// message.
func validateAuth(v *fault.Violations, a *wfv1.AuthConfig) {
	if a == nil {
		return
	}
	const field = "params.auth"
	if len(a.Bindings) > maxAuthBindings {
		v.Add(field+".bindings", "at most %d bindings", maxAuthBindings)
		return
	}
	for i, b := range a.Bindings {
		validateBinding(v, fmt.Sprintf("%s.bindings[%d]", field, i), b)
	}
	if cb := a.GlobalCallback; cb != nil {
		validateCallback(v, field+".global_callback", cb, false)
	}
}

func validateBinding(v *fault.Violations, field string, b *wfv1.DomainAuthBinding) {
	if b == nil {
		v.Add(field, "a binding is required")
		return
	}
	switch {
	case len(b.Domains) == 0:
		v.Add(field+".domains", `at least one domain pattern is required ("*", "example.com", "*.example.com")`)
	case len(b.Domains) > maxDomainPatterns:
		v.Add(field+".domains", "at most %d patterns", maxDomainPatterns)
	}
	for j, d := range b.Domains {
		if err := guard.ValidatePattern(d); err != nil {
			v.Add(fmt.Sprintf("%s.domains[%d]", field, j), "%v", err)
		}
	}
	cred := b.Credential != ""
	if cred && !credentialNamePattern.MatchString(b.Credential) {
		v.Add(field+".credential", "a credential name is 1-63 characters of [a-z0-9_.-] starting with a letter or digit")
	}
	// With a credential, a method's empty secret fields are filled from the
	// credential's same-named fields, so they may be left out.
	required := func(f, what, val string) {
		if val == "" && !cred {
			v.Add(field+"."+f, "%s is required (or name a credential that holds it)", what)
		}
	}
	switch m := b.Method.(type) {
	case nil:
		if !cred {
			v.Add(field, "a method (basic, bearer, api_key, oauth_client_credentials, cookie, local_storage, custom_callback) or a credential is required")
		}
	case *wfv1.DomainAuthBinding_Basic:
		p, f := m.Basic, field+".basic"
		if p == nil {
			v.Add(f, "must not be empty")
			return
		}
		required("basic.username", "a username", p.Username)
		required("basic.password", "a password", p.Password)
		secretValue(v, f+".password", p.Password)
		switch p.Strategy {
		case wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_UNSPECIFIED:
			p.Strategy = wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_HTTP_HEADER
		case wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_HTTP_HEADER, wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_FORM_LOGIN:
		default:
			v.Add(f+".strategy", "unknown strategy %d", p.Strategy)
		}
		if p.Strategy == wfv1.BasicAuthStrategy_BASIC_AUTH_STRATEGY_HTTP_HEADER &&
			(strings.Contains(p.Username, ":") || !httpguts.ValidHeaderFieldValue(p.Username)) {
			v.Add(f+".username", "a username sent in a Basic header cannot contain ':' or control characters")
		}
	case *wfv1.DomainAuthBinding_Bearer:
		p, f := m.Bearer, field+".bearer"
		if p == nil {
			v.Add(f, "must not be empty")
			return
		}
		required("bearer.token", "a token", p.Token)
		headerValue(v, f+".token", p.Token)
		headerName(v, f+".header_name", p.HeaderName)
		if !httpguts.ValidHeaderFieldValue(p.Prefix) {
			v.Add(f+".prefix", "must be a valid header value")
		}
	case *wfv1.DomainAuthBinding_ApiKey:
		p, f := m.ApiKey, field+".api_key"
		if p == nil {
			v.Add(f, "must not be empty")
			return
		}
		required("api_key.key", "a key", p.Key)
		headerValue(v, f+".key", p.Key)
		headerName(v, f+".header_name", p.HeaderName)
		if !httpguts.ValidHeaderFieldValue(p.Prefix) {
			v.Add(f+".prefix", "must be a valid header value")
		}
	case *wfv1.DomainAuthBinding_OauthClientCredentials:
		p, f := m.OauthClientCredentials, field+".oauth_client_credentials"
		if p == nil {
			v.Add(f, "must not be empty")
			return
		}
		required("oauth_client_credentials.client_id", "a client_id", p.ClientId)
		required("oauth_client_credentials.client_secret", "a client_secret", p.ClientSecret)
		secretValue(v, f+".client_secret", p.ClientSecret)
		if p.TokenUrl != "" || !cred {
			validateWebhookURL(v, f+".token_url", p.TokenUrl)
		}
		if strings.ContainsFunc(p.Scope, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '"' || r == '\\' }) {
			v.Add(f+".scope", "must be space-separated scope tokens")
		}
	case *wfv1.DomainAuthBinding_Cookie:
		validateCookies(v, field+".cookie", m.Cookie, b.Domains, cred)
	case *wfv1.DomainAuthBinding_LocalStorage:
		validateStorage(v, field+".local_storage", m.LocalStorage)
	case *wfv1.DomainAuthBinding_CustomCallback:
		validateCallback(v, field+".custom_callback", m.CustomCallback, cred)
	}
}

// headerValue checks a secret that is sent as a header value.
func headerValue(v *fault.Violations, field, s string) {
	if !httpguts.ValidHeaderFieldValue(s) {
		v.Add(field, "must be a valid header value (no line breaks or control characters)")
	}
	secretValue(v, field, s)
}

func headerName(v *fault.Violations, field, s string) {
	if s != "" && !httpguts.ValidHeaderFieldName(s) {
		v.Add(field, "%q is not a valid header name", s)
	}
}

func secretValue(v *fault.Violations, field, s string) {
	if len(s) > maxSecretLen {
		v.Add(field, "at most %d bytes", maxSecretLen)
	}
}

func validateCookies(v *fault.Violations, field string, c *wfv1.CookieAuth, domains []string, cred bool) {
	switch {
	case c == nil || len(c.Cookies) == 0:
		v.Add(field+".cookies", "at least one cookie is required")
		return
	case len(c.Cookies) > maxCookies:
		v.Add(field+".cookies", "at most %d cookies", maxCookies)
		return
	}
	onlyAny := true
	for _, d := range domains {
		onlyAny = onlyAny && d == "*"
	}
	for i, ck := range c.Cookies {
		f := fmt.Sprintf("%s.cookies[%d]", field, i)
		if ck == nil {
			v.Add(f, "a cookie is required")
			continue
		}
		if ck.Name == "" || !httpguts.ValidHeaderFieldName(ck.Name) {
			// Cookie names are tokens, as header names are.
			v.Add(f+".name", "a cookie name of token characters (no spaces, separators or control characters) is required")
		}
		if ck.Value == "" && !cred {
			v.Add(f+".value", "a value is required (or name a credential with a field named as the cookie)")
		}
		if strings.ContainsFunc(ck.Value, func(r rune) bool { return r < 0x21 || r == 0x7f || r == ';' || r == ',' || r == '"' || r == '\\' }) {
			v.Add(f+".value", "contains a character a cookie value cannot carry (whitespace, control characters, ';', ',', '\"' or '\\\\')")
		}
		secretValue(v, f+".value", ck.Value)
		switch d := strings.TrimPrefix(ck.Domain, "."); {
		case ck.Domain == "" && onlyAny:
			v.Add(f+".domain", `a domain is required when the binding's only domain is "*"`)
		case ck.Domain != "" && (strings.Contains(d, "*") || guard.ValidatePattern(d) != nil):
			v.Add(f+".domain", "must be a host name such as example.com, without a wildcard")
		}
		if ck.Path != "" && !strings.HasPrefix(ck.Path, "/") {
			v.Add(f+".path", `must start with "/"`)
		}
		if ck.Expires != nil {
			if err := ck.Expires.CheckValid(); err != nil {
				v.Add(f+".expires", "invalid time: %v", err)
			}
		}
	}
}

func validateStorage(v *fault.Violations, field string, s *wfv1.LocalStorageAuth) {
	if s == nil {
		v.Add(field, "must not be empty")
		return
	}
	u, err := url.Parse(s.Origin)
	if s.Origin == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		v.Add(field+".origin", `must be an origin, scheme://host[:port] with http or https (e.g. "https://app.example.com")`)
	}
	switch {
	case len(s.Entries) == 0:
		v.Add(field+".entries", "at least one entry is required")
	case len(s.Entries) > maxStorageEntries:
		v.Add(field+".entries", "at most %d entries", maxStorageEntries)
	}
	for k, val := range s.Entries {
		if k == "" || len(k) > maxStorageKeyLen {
			v.Add(field+".entries", "keys are 1-%d bytes", maxStorageKeyLen)
		}
		secretValue(v, fmt.Sprintf("%s.entries[%q]", field, k), val)
	}
}

// validateCallback checks a login callback; cred says a credential (the
// binding's) can serve the script's secret references.
func validateCallback(v *fault.Violations, field string, cb *wfv1.AuthCallback, cred bool) {
	if cb == nil {
		v.Add(field, "must not be empty")
		return
	}
	switch c := cb.Callback.(type) {
	case *wfv1.AuthCallback_Script:
		validateScript(v, field+".script", c.Script, cred)
	case *wfv1.AuthCallback_Webhook:
		f := field + ".webhook"
		if c.Webhook == nil {
			v.Add(f, "must not be empty")
			return
		}
		validateWebhookURL(v, f+".url", c.Webhook.Url)
		validateHeaders(v, f+".headers", c.Webhook.Headers)
		c.Webhook.Timeout = validateDuration(v, f+".timeout", c.Webhook.Timeout, defaultCallbackTimeout, minCallbackTimeout, maxCallbackTimeout)
	default:
		v.Add(field, "a script or a webhook is required")
	}
}

func validateScript(v *fault.Violations, field string, s *wfv1.LoginScript, cred bool) {
	if s == nil {
		v.Add(field, "must not be empty")
		return
	}
	if s.Credential != "" {
		if !credentialNamePattern.MatchString(s.Credential) {
			v.Add(field+".credential", "a credential name is 1-63 characters of [a-z0-9_.-] starting with a letter or digit")
		}
		cred = true
	}
	switch {
	case len(s.Steps) == 0:
		v.Add(field+".steps", "at least one step is required")
	case len(s.Steps) > maxLoginSteps:
		v.Add(field+".steps", "at most %d steps", maxLoginSteps)
		return
	}
	for i, st := range s.Steps {
		f := fmt.Sprintf("%s.steps[%d]", field, i)
		if st == nil {
			v.Add(f, "a step is required")
			continue
		}
		if len(st.Selector) > maxSelectorLen {
			v.Add(f+".selector", "at most %d characters", maxSelectorLen)
		}
		needSelector := func() {
			if strings.TrimSpace(st.Selector) == "" {
				v.Add(f+".selector", "%s needs a CSS selector", st.Action)
			}
		}
		switch st.Action {
		case "navigate":
			validateWebhookURL(v, f+".url", st.Url)
		case "fill":
			needSelector()
			switch {
			case st.SecretRef == "":
			case len(st.SecretRef) > maxSecretRefLen:
				v.Add(f+".secret_ref", "at most %d characters", maxSecretRefLen)
			case !cred:
				v.Add(f+".secret_ref", "names a credential field, but neither the script nor its binding names a credential")
			}
			if st.SecretRef != "" && st.Value != "" {
				v.Add(f, "set value or secret_ref, not both")
			}
		case "click", "wait_for":
			needSelector()
		case "press":
			if st.Value == "" {
				v.Add(f+".value", `press needs a key ("Enter", "Tab")`)
			}
		default:
			v.Add(f+".action", "must be navigate, fill, click, press or wait_for (got %q)", st.Action)
		}
	}
}
