package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// Options are what Auth needs from the service.
type Options struct {
	// RunID is sent to login webhooks.
	RunID string
	// HTTPClient calls token endpoints and login webhooks (the run's
	// egress rules). Default: a client without them, for tests only.
	HTTPClient *http.Client
	// CDPListenHost is the address the short-lived CDP endpoints of login
	// webhooks listen on. Default "127.0.0.1".
	CDPListenHost string
	// CDPAdvertiseHost is the host named in their URLs. Default
	// CDPListenHost.
	CDPAdvertiseHost string
	// NavigationTimeout bounds a reload and a login script's navigation.
	// Default 30s.
	NavigationTimeout time.Duration
	// StepTimeout bounds every other login script step. Default 15s.
	StepTimeout time.Duration
	// OnApplied is told each time a binding is first applied to a host,
	// and re-applied after a 401/403. Default none.
	OnApplied func(context.Context, Applied)
	// OnFailed is told of every authentication failure. Default none.
	OnFailed func(context.Context, Failure)
	// Logger logs what Auth does (never a value). Default slog.Default().
	Logger *slog.Logger

	now func() time.Time // tests move the clock
}

// Applied is a binding applied to a host.
type Applied struct {
	// Domain is the host ("" for the global callback).
	Domain string
	// Method is the method's Kind.
	Method string
	// Credential is the binding's stored credential; "" for inline values.
	Credential string
	// Reauth is true when it was re-applied after a 401/403.
	Reauth bool
}

// Failure is an authentication that failed.
type Failure struct {
	Domain, Method, Credential string
	// Reason says what failed, without any secret value.
	Reason string
}

// Auth is one run's authentication: network rules for its browser
// contexts, form-login secrets for the model, and the runner hooks that
// run login callbacks and re-authenticate after a 401/403. Create it with
// New; it implements runner.Hooks.
type Auth struct {
	cfg      Config
	opts     Options
	bindings []*binding
	global   *binding // nil without a global callback
	secrets  []runner.Secret

	mu         sync.Mutex
	ctxID      string            // the browser context hooks last saw
	globalDone bool              // in ctxID
	visited    map[visitKey]bool // callbacks run in ctxID
	announced  map[visitKey]bool // Applied told, for the run
	pending    []Applied         // applied by the network layer, not yet told
	failed     *Failure          // a failure the network layer met (token)
	docs       []browser.DocumentResponse
	reauthed   map[string]bool // hosts re-authenticated once
	redact     []string        // every secret value, acquired tokens too
	redactSeen map[string]bool
}

// binding is a compiled Binding.
type binding struct {
	index int
	Binding
	domains *guard.Policy
	tokens  *tokenSource // OAuth only
}

type visitKey struct {
	binding int
	host    string
}

// New validates cfg and returns its Auth. Errors name the binding and the
// field, never a value.
func New(cfg Config, opts Options) (*Auth, error) {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.CDPListenHost == "" {
		opts.CDPListenHost = "127.0.0.1"
	}
	if opts.CDPAdvertiseHost == "" {
		opts.CDPAdvertiseHost = opts.CDPListenHost
	}
	if opts.NavigationTimeout <= 0 {
		opts.NavigationTimeout = 30 * time.Second
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 15 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	a := &Auth{cfg: cfg, opts: opts, visited: map[visitKey]bool{}, announced: map[visitKey]bool{},
		reauthed: map[string]bool{}, redactSeen: map[string]bool{}}
	var errs []error
	for i, bd := range cfg.Bindings {
		b, err := a.compile(i, bd)
		if err != nil {
			errs = append(errs, fmt.Errorf("bindings[%d]: %w", i, err))
			continue
		}
		a.bindings = append(a.bindings, b)
	}
	if cfg.Global != nil {
		if err := cfg.Global.validate(nil); err != nil {
			errs = append(errs, fmt.Errorf("global_callback: %w", err))
		} else {
			a.global = &binding{index: -1, Binding: Binding{Method: cfg.Global, Credential: cfg.GlobalCredential}}
			a.collect(cfg.Global)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	a.secrets = formSecrets(a.bindings)
	return a, nil
}

func (a *Auth) compile(i int, bd Binding) (*binding, error) {
	if len(bd.Domains) == 0 {
		return nil, errors.New("at least one domain pattern is required")
	}
	pol, err := guard.New(bd.Domains, nil, true)
	if err != nil {
		return nil, err
	}
	if bd.Method == nil {
		return nil, errors.New("a method is required")
	}
	if err := bd.Method.validate(bd.Domains); err != nil {
		return nil, fmt.Errorf("%s: %w", bd.Method.Kind(), err)
	}
	b := &binding{index: i, Binding: bd, domains: pol}
	if m, ok := bd.Method.(*OAuth); ok {
		b.tokens = newTokenSource(m, a.opts.HTTPClient, a.opts.now, a.addSecret)
	}
	a.collect(bd.Method)
	return b, nil
}

// collect notes a method's secret values for redaction.
func (a *Auth) collect(m Method) {
	switch m := m.(type) {
	case *Basic:
		a.addSecret(m.Password)
		if !m.FormLogin {
			_, v := m.header()
			a.addSecret(strings.TrimPrefix(v, "Basic "))
		}
	case *Bearer:
		a.addSecret(m.Token)
	case *APIKey:
		a.addSecret(m.Key)
	case *OAuth:
		a.addSecret(m.ClientSecret)
	case *Cookies:
		for _, c := range m.Cookies {
			a.addSecret(c.Value)
		}
	case *LocalStorage:
		for _, v := range m.Entries {
			a.addSecret(v)
		}
	case *Callback:
		if m.Script != nil {
			for _, v := range m.Script.Secrets {
				a.addSecret(v)
			}
		}
		if m.Webhook != nil {
			for _, v := range m.Webhook.Headers {
				a.addSecret(v)
			}
		}
	}
}

// addSecret remembers a value to redact; values too short to be told
// apart from ordinary text are left out.
func (a *Auth) addSecret(v string) {
	if len(v) < 4 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.redactSeen[v] {
		a.redactSeen[v] = true
		a.redact = append(a.redact, v)
	}
}

// Redact returns every secret value Auth knows of so far (passwords,
// tokens, keys, header values, cookie and storage values, client secrets,
// the OAuth tokens acquired), for the run's redaction.
func (a *Auth) Redact() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.redact)
}

// scrub replaces every known secret value in s.
func (a *Auth) scrub(s string) string {
	for _, v := range a.Redact() {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// Secrets are the form-login values the model uses by placeholder: a
// "username" and "password" for the one form-login binding, or
// "<domain>.username" and "<domain>.password" for each of several.
func (a *Auth) Secrets() []runner.Secret { return slices.Clone(a.secrets) }

var nameChars = regexp.MustCompile(`[^a-z0-9_.]+`)

func formSecrets(bindings []*binding) []runner.Secret {
	var forms []*binding
	for _, b := range bindings {
		if m, ok := b.Method.(*Basic); ok && m.FormLogin {
			forms = append(forms, b)
		}
	}
	var out []runner.Secret
	used := map[string]bool{}
	for _, b := range forms {
		m := b.Method.(*Basic)
		prefix := ""
		if len(forms) > 1 {
			d := strings.TrimPrefix(strings.ToLower(b.Domains[0]), "*.")
			if d == "*" {
				d = "any"
			}
			d = strings.Trim(nameChars.ReplaceAllString(d, "_"), "._")
			if len(d) > 40 {
				d = d[:40]
			}
			if d == "" || used[d] {
				d = fmt.Sprintf("login%d", b.index+1)
			}
			used[d] = true
			prefix = d + "."
		}
		hint := "login for " + strings.Join(b.Domains, ", ")
		out = append(out,
			runner.Secret{Name: prefix + "username", Value: m.Username, Domains: slices.Clone(b.Domains), Hint: hint + " (username)"},
			runner.Secret{Name: prefix + "password", Value: m.Password, Domains: slices.Clone(b.Domains), Hint: hint + " (password)"},
		)
	}
	return out
}

// NetworkRules adds the run's header rule, cookies, localStorage entries
// and the watch on bound hosts' document statuses to r (the rules of every
// browser context of the run).
func (a *Auth) NetworkRules(r *browser.NetworkRules) {
	var headerDomains, watched []string
	for _, b := range a.bindings {
		switch m := b.Method.(type) {
		case *Basic:
			if !m.FormLogin {
				headerDomains = append(headerDomains, b.Domains...)
			}
		case *Bearer, *APIKey, *OAuth:
			headerDomains = append(headerDomains, b.Domains...)
		case *Cookies:
			r.Cookies = append(r.Cookies, networkCookies(m, b.Domains)...)
		case *LocalStorage:
			r.LocalStorage = append(r.LocalStorage, browser.OriginStorage{Origin: m.Origin, Items: m.Entries})
		}
		if b.Method.Kind() != KindFormLogin {
			watched = append(watched, b.Domains...)
		}
	}
	if len(headerDomains) > 0 {
		r.Headers = append(r.Headers, browser.HeaderRule{Domains: dedupe(headerDomains), Func: a.headers})
	}
	if len(watched) > 0 {
		prev := r.OnDocument
		r.OnDocument = func(d browser.DocumentResponse) {
			if prev != nil {
				prev(d)
			}
			a.document(d)
		}
		r.DocumentDomains = append(r.DocumentDomains, dedupe(watched)...)
	}
}

func dedupe(s []string) []string {
	out := make([]string, 0, len(s))
	seen := map[string]bool{}
	for _, v := range s {
		k := strings.ToLower(v)
		if !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

func networkCookies(m *Cookies, domains []string) []browser.NetworkCookie {
	out := make([]browser.NetworkCookie, 0, len(m.Cookies))
	for _, c := range m.Cookies {
		nc := browser.NetworkCookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			Secure: c.Secure, HTTPOnly: c.HTTPOnly, Expires: c.Expires}
		if nc.Domain == "" {
			host := cookieHost(domains)
			if hasWildcardOnly(domains) {
				nc.Domain = host // the wildcard's parent
			} else {
				// A host-only cookie for the binding's first exact domain.
				scheme := "http"
				if c.Secure {
					scheme = "https"
				}
				if strings.Contains(host, ":") { // IPv6
					host = "[" + host + "]"
				}
				nc.URL = scheme + "://" + host + "/"
			}
		}
		out = append(out, nc)
	}
	return out
}

// hasWildcardOnly reports whether domains has no exact pattern.
func hasWildcardOnly(domains []string) bool {
	for _, d := range domains {
		if d != "*" && !strings.HasPrefix(d, "*.") {
			return false
		}
	}
	return true
}

// match returns the binding for host: the first whose domains match.
func (a *Auth) match(host string) *binding {
	for _, b := range a.bindings {
		if b.domains.MatchesHost(host) {
			return b
		}
	}
	return nil
}

// headers is the header rule's Func: the header of the binding that wins
// for the request's host, if it is a header method.
func (a *Auth) headers(ctx context.Context, u *url.URL) map[string]string {
	host := u.Hostname()
	b := a.match(host)
	if b == nil {
		return nil
	}
	var name, value string
	switch m := b.Method.(type) {
	case *Basic:
		if m.FormLogin {
			return nil
		}
		name, value = m.header()
	case *Bearer:
		name, value = m.header()
	case *APIKey:
		name, value = m.header()
	case *OAuth:
		tok, err := b.tokens.token(ctx)
		if err != nil {
			a.fail(b, host, fmt.Sprintf("no OAuth token from %s: %s", redactURL(m.TokenURL), a.scrub(err.Error())))
			return nil
		}
		name, value = "Authorization", "Bearer "+tok
	default:
		return nil
	}
	a.noteApplied(b, host)
	return map[string]string{name: value}
}

// noteApplied records, once per binding and host, that the network layer
// applied a binding; the hooks tell OnApplied.
func (a *Auth) noteApplied(b *binding, host string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := visitKey{b.index, host}
	if a.announced[k] {
		return
	}
	a.announced[k] = true
	a.pending = append(a.pending, Applied{Domain: host, Method: b.Method.Kind(), Credential: b.Credential})
}

// fail records a failure the network layer met; the next hook ends the
// run with it.
func (a *Auth) fail(b *binding, host, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed == nil {
		a.failed = &Failure{Domain: host, Method: b.Method.Kind(), Credential: b.Credential, Reason: reason}
	}
}

// runError is the failure as the run-ending error: it names the method, host
// and credential.
func (f Failure) runError() *runner.Error {
	s := f.Method
	if f.Domain != "" {
		s += " for " + f.Domain
	}
	if f.Credential != "" {
		s += fmt.Sprintf(" (credential %q)", f.Credential)
	}
	return &runner.Error{Category: runner.CategoryAuthentication, Message: s + ": " + f.Reason}
}

// document records a top-level document response of a watched host.
func (a *Auth) document(d browser.DocumentResponse) {
	if d.Status != http.StatusUnauthorized && d.Status != http.StatusForbidden {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.docs = append(a.docs, d)
}

// redactURL drops a URL's query, which may carry a secret.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the token endpoint"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}
