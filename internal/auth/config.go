package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Config is a run's authentication.
type Config struct {
	// Bindings are tried in order for a host; the first whose Domains
	// match wins.
	Bindings []Binding
	// Global, when set, runs once in every browser context of the run,
	// before the start URL opens.
	Global *Callback
	// GlobalCredential names the stored credential the global callback's
	// secrets come from, for events and errors; empty for none.
	GlobalCredential string
}

// Binding applies one method to the hosts its domain patterns match.
type Binding struct {
	// Domains are domain patterns ("*", "example.com", "*.example.com");
	// at least one.
	Domains []string
	// Method is one of *Basic, *Bearer, *APIKey, *OAuth, *Cookies,
	// *LocalStorage or *Callback.
	Method Method
	// Credential names the stored credential the method's values came
	// from, for events and errors; empty for inline values.
	Credential string
}

// Method is how a binding authenticates.
type Method interface {
	// Kind names the method in events, audit records and errors (one of
	// the Kind constants).
	Kind() string
	validate(domains []string) error
}

// The method kinds.
const (
	KindBasicHeader  = "basic_http_header"
	KindFormLogin    = "basic_form_login"
	KindBearer       = "bearer"
	KindAPIKey       = "api_key"
	KindOAuth        = "oauth_client_credentials"
	KindCookie       = "cookie"
	KindLocalStorage = "local_storage"
	KindScript       = "login_script"
	KindWebhook      = "callback_webhook"
)

// Basic is a username and password, sent as an Authorization: Basic
// header or, with FormLogin, typed into a login form by the model through
// placeholders.
type Basic struct {
	Username string
	Password string
	// FormLogin selects the form-login strategy. Default: the header.
	FormLogin bool
}

// Kind implements Method.
func (m *Basic) Kind() string {
	if m.FormLogin {
		return KindFormLogin
	}
	return KindBasicHeader
}

func (m *Basic) validate([]string) error {
	if m.Username == "" || m.Password == "" {
		return errors.New("username and password are required")
	}
	if !m.FormLogin && strings.Contains(m.Username, ":") {
		return errors.New("a username sent in a Basic header cannot contain ':'")
	}
	return nil
}

func (m *Basic) header() (string, string) {
	return "Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(m.Username+":"+m.Password))
}

// Bearer sends a token in a header.
type Bearer struct {
	Token string
	// HeaderName defaults to "Authorization".
	HeaderName string
	// Prefix is written before the token, separated by a space. Default
	// "Bearer".
	Prefix string
}

// Kind implements Method.
func (m *Bearer) Kind() string { return KindBearer }

func (m *Bearer) validate([]string) error {
	if m.Token == "" {
		return errors.New("a token is required")
	}
	return nil
}

func (m *Bearer) header() (string, string) {
	name, prefix := m.HeaderName, m.Prefix
	if name == "" {
		name = "Authorization"
	}
	if prefix == "" {
		prefix = "Bearer"
	}
	return name, strings.TrimSpace(prefix + " " + m.Token)
}

// APIKey sends a key in a header.
type APIKey struct {
	Key string
	// HeaderName defaults to "X-API-Key".
	HeaderName string
	// Prefix is written before the key as given ("Api-Key "). Default
	// none.
	Prefix string
}

// Kind implements Method.
func (m *APIKey) Kind() string { return KindAPIKey }

func (m *APIKey) validate([]string) error {
	if m.Key == "" {
		return errors.New("a key is required")
	}
	return nil
}

func (m *APIKey) header() (string, string) {
	name := m.HeaderName
	if name == "" {
		name = "X-API-Key"
	}
	return name, m.Prefix + m.Key
}

// OAuth acquires a token with the client-credentials grant (RFC 6749 §4.4)
// and sends it as Authorization: Bearer.
type OAuth struct {
	ClientID     string
	ClientSecret string
	// TokenURL is the token endpoint, an absolute http(s) URL.
	TokenURL string
	// Scope is space-separated; default none.
	Scope string
}

// Kind implements Method.
func (m *OAuth) Kind() string { return KindOAuth }

func (m *OAuth) validate([]string) error {
	if m.ClientID == "" || m.ClientSecret == "" {
		return errors.New("client_id and client_secret are required")
	}
	return checkHTTPURL("token_url", m.TokenURL)
}

// Cookies are stored in the browser context.
type Cookies struct {
	Cookies []Cookie
}

// Cookie is one cookie to store.
type Cookie struct {
	Name  string
	Value string
	// Domain makes a domain cookie (sent to the domain and its
	// subdomains). Default: a host-only cookie for the binding's first
	// domain pattern that is not a wildcard, else a domain cookie for the
	// first wildcard's parent ("*.example.com": example.com).
	Domain string
	// Path defaults to "/".
	Path             string
	Secure, HTTPOnly bool
	// Expires is zero for a session cookie.
	Expires time.Time
}

// Kind implements Method.
func (m *Cookies) Kind() string { return KindCookie }

func (m *Cookies) validate(domains []string) error {
	if len(m.Cookies) == 0 {
		return errors.New("at least one cookie is required")
	}
	for i, c := range m.Cookies {
		if c.Name == "" {
			return fmt.Errorf("cookies[%d]: a name is required", i)
		}
		if c.Domain == "" && cookieHost(domains) == "" {
			return fmt.Errorf("cookies[%d]: a domain is required when the binding names no domain but \"*\"", i)
		}
	}
	return nil
}

// cookieHost is the default cookie domain of a binding: its first exact
// pattern, else the parent of its first wildcard; "" for "*" only.
func cookieHost(domains []string) string {
	for _, d := range domains {
		if d != "*" && !strings.HasPrefix(d, "*.") {
			return strings.Trim(d, "[]")
		}
	}
	for _, d := range domains {
		if strings.HasPrefix(d, "*.") {
			return strings.TrimPrefix(d, "*.")
		}
	}
	return ""
}

// LocalStorage entries are written for one origin.
type LocalStorage struct {
	// Origin is "https://app.example.com" or "http://host:port".
	Origin  string
	Entries map[string]string
}

// Kind implements Method.
func (m *LocalStorage) Kind() string { return KindLocalStorage }

func (m *LocalStorage) validate([]string) error {
	if len(m.Entries) == 0 {
		return errors.New("at least one entry is required")
	}
	u, err := url.Parse(m.Origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("origin must be scheme://host[:port] with http or https")
	}
	return nil
}

// Callback is a login the built-in methods cannot express: exactly one of
// Script and Webhook.
type Callback struct {
	Script  *Script
	Webhook *Webhook
}

// Kind implements Method.
func (m *Callback) Kind() string {
	if m.Webhook != nil {
		return KindWebhook
	}
	return KindScript
}

func (m *Callback) validate([]string) error {
	switch {
	case (m.Script == nil) == (m.Webhook == nil):
		return errors.New("exactly one of a script and a webhook is required")
	case m.Script != nil:
		return m.Script.validate()
	default:
		return m.Webhook.validate()
	}
}

// Script is a declarative login: steps run in order on the page.
type Script struct {
	Steps []Step
	// Secrets are the values SecretRef names (a stored credential's
	// fields).
	Secrets map[string]string
}

// The actions of a login step.
const (
	StepNavigate = "navigate"
	StepFill     = "fill"
	StepClick    = "click"
	StepPress    = "press"
	StepWaitFor  = "wait_for"
)

// Step is one step of a Script.
type Step struct {
	// Action is one of the Step* constants.
	Action string
	// URL is the absolute http(s) URL of navigate.
	URL string
	// Selector is the CSS selector of fill, click and wait_for, and of
	// the element press focuses first (optional).
	Selector string
	// Value is the text of fill and the key of press ("Enter").
	Value string
	// SecretRef names the Script.Secrets value fill types instead of
	// Value.
	SecretRef string
}

func (s *Script) validate() error {
	if len(s.Steps) == 0 {
		return errors.New("a login script needs at least one step")
	}
	for i, st := range s.Steps {
		if err := st.validate(s.Secrets); err != nil {
			return fmt.Errorf("steps[%d]: %w", i, err)
		}
	}
	return nil
}

func (st Step) validate(secrets map[string]string) error {
	switch st.Action {
	case StepNavigate:
		return checkHTTPURL("url", st.URL)
	case StepFill:
		if st.Selector == "" {
			return errors.New("fill needs a selector")
		}
		if st.SecretRef != "" {
			if _, ok := secrets[st.SecretRef]; !ok {
				return fmt.Errorf("secret_ref %q names no field of the credential", st.SecretRef)
			}
		}
	case StepClick, StepWaitFor:
		if st.Selector == "" {
			return fmt.Errorf("%s needs a selector", st.Action)
		}
	case StepPress:
		if st.Value == "" {
			return errors.New("press needs a key in value")
		}
	default:
		return fmt.Errorf("unknown action %q (navigate, fill, click, press, wait_for)", st.Action)
	}
	return nil
}

// Webhook is told a short-lived CDP endpoint for the run's browser context
// and answers when the login is done.
type Webhook struct {
	// URL receives the POST.
	URL string
	// Headers are sent with it (secret values).
	Headers map[string]string
	// Timeout bounds the login, 1s-5m. Default 60s.
	Timeout time.Duration
}

// Webhook limits.
const (
	DefaultWebhookTimeout = 60 * time.Second
	MaxWebhookTimeout     = 5 * time.Minute
)

func (w *Webhook) validate() error {
	if w.Timeout != 0 && (w.Timeout < time.Second || w.Timeout > MaxWebhookTimeout) {
		return fmt.Errorf("timeout must be between 1s and %s", MaxWebhookTimeout)
	}
	return checkHTTPURL("url", w.URL)
}

func checkHTTPURL(field, raw string) error {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fmt.Errorf("%s must be an absolute http(s) URL without credentials", field)
	}
	return nil
}
