package guard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Field names used in [PatternError.Field].
const (
	fieldAllowed = "allowed_domains"
	fieldBlocked = "blocked_domains"
)

// Resolver resolves host names for the private-network rule. *net.Resolver
// implements it; tests inject fakes with [Policy.WithResolver].
type Resolver interface {
	// LookupNetIP looks up host, with network "ip", and returns its
	// addresses.
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Policy is the domain policy of one run. Create it with [New]; it is
// immutable afterwards and safe for concurrent use.
//
// The exported fields record the configuration New was given; changing
// them after New has no effect. A Policy built as a struct literal (not by
// New) compiles its patterns on every check and refuses every URL with the
// validation error if any pattern is invalid.
type Policy struct {
	// Allowed are the allowed domain patterns; empty allows every host
	// that is not blocked.
	Allowed []string
	// Blocked are the blocked domain patterns; they win over Allowed.
	Blocked []string
	// AllowPrivate disables the private-network rule.
	AllowPrivate bool

	rules    *rules   // compiled by New
	resolver Resolver // nil means net.DefaultResolver
}

// rules is the compiled form of a Policy's patterns.
type rules struct {
	allowed []pattern
	blocked []pattern
}

// New validates the patterns and returns the compiled policy. If any pattern
// is invalid, it returns nil and the errors.Join of one [*PatternError] per
// invalid pattern.
func New(allowed, blocked []string, allowPrivate bool) (*Policy, error) {
	r, err := compile(allowed, blocked)
	if err != nil {
		return nil, err
	}
	return &Policy{
		Allowed:      slices.Clone(allowed),
		Blocked:      slices.Clone(blocked),
		AllowPrivate: allowPrivate,
		rules:        r,
	}, nil
}

func compile(allowed, blocked []string) (*rules, error) {
	var errs []error
	list := func(field string, in []string) []pattern {
		out := make([]pattern, 0, len(in))
		for i, s := range in {
			pt, err := compilePattern(s)
			if err != nil {
				errs = append(errs, &PatternError{Field: field, Index: i, Pattern: s, Err: err})
				continue
			}
			out = append(out, pt)
		}
		return out
	}
	r := &rules{allowed: list(fieldAllowed, allowed), blocked: list(fieldBlocked, blocked)}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// WithResolver returns a copy of p that resolves host names with r (nil
// restores the default, net.DefaultResolver). p itself is not modified.
func (p *Policy) WithResolver(r Resolver) *Policy {
	cp := *p
	cp.resolver = r
	return &cp
}

// compiled returns the compiled rules, compiling them if p was not built by
// New.
func (p *Policy) compiled() (*rules, error) {
	if p.rules != nil {
		return p.rules, nil
	}
	return compile(p.Allowed, p.Blocked)
}

// Check parses rawURL and applies the policy to it, as [Policy.CheckURL]
// does. An unparseable URL is refused with [ReasonInvalid].
func (p *Policy) Check(ctx context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &BlockedError{URL: rawURL, Reason: ReasonInvalid, detail: err.Error()}
	}
	return p.check(ctx, u, rawURL)
}

// CheckURL applies the policy to u (see the package documentation for the
// rules and their precedence). It returns nil if the browser may visit u,
// a [*BlockedError] if the policy refuses it, or the context's error if ctx
// is done while a host name is being resolved.
func (p *Policy) CheckURL(ctx context.Context, u *url.URL) error {
	if u == nil {
		return &BlockedError{Reason: ReasonInvalid, detail: "no URL"}
	}
	return p.check(ctx, u, "")
}

// check implements CheckURL. raw is the URL as given to Check, or "" to
// derive it from u when an error is returned.
func (p *Policy) check(ctx context.Context, u *url.URL, raw string) error {
	r, err := p.compiled()
	if err != nil {
		return err
	}
	block := func(reason Reason, h *host, pattern, detail string) error {
		e := &BlockedError{Reason: reason, Pattern: pattern, detail: detail}
		if raw != "" && u.User == nil {
			e.URL = raw
		} else {
			e.URL = u.Redacted()
		}
		if h != nil {
			e.Host = h.name
			if h.isIP {
				e.Host = h.addr.String()
			}
		}
		return e
	}

	// 1. Scheme.
	switch {
	case strings.EqualFold(u.Scheme, "http"), strings.EqualFold(u.Scheme, "https"):
	case isAboutBlank(u):
		return nil
	default:
		return block(ReasonScheme, nil, "", u.Scheme)
	}

	// 2. Host.
	h, err := urlHost(u)
	if err != nil {
		return block(ReasonInvalid, nil, "", err.Error())
	}

	// 3. Blocked wins.
	for i := range r.blocked {
		if pt := &r.blocked[i]; pt.match(&h) {
			return block(ReasonBlocked, &h, pt.raw, "")
		}
	}

	// 4. Allowed, and whether the host is named explicitly.
	explicit := false
	if len(r.allowed) > 0 {
		matched := false
		for i := range r.allowed {
			if pt := &r.allowed[i]; pt.match(&h) {
				matched = true
				if pt.explicit() {
					explicit = true
					break
				}
			}
		}
		if !matched {
			return block(ReasonNotAllowed, &h, "", "")
		}
	}

	// 5. Private networks.
	if p.AllowPrivate || explicit {
		return nil
	}
	if h.isIP {
		if isPrivateAddr(h.addr) {
			return block(ReasonPrivate, &h, "", "")
		}
		return nil
	}
	if isLocalhost(h.name) {
		return block(ReasonPrivate, &h, "", "")
	}
	res := p.resolver
	if res == nil {
		res = net.DefaultResolver
	}
	addrs, err := res.LookupNetIP(ctx, "ip", h.name)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("guard: resolving %s: %w", h.name, cerr)
		}
		// Not a policy violation: the browser will fail to resolve it too.
		return nil
	}
	for _, a := range addrs {
		if isPrivateAddr(a) {
			return block(ReasonPrivate, &h, "", a.WithZone("").Unmap().String())
		}
	}
	return nil
}

// MatchesHost reports whether the domain patterns let the browser visit
// host: it matches no blocked pattern and, if the allowed list is
// non-empty, matches an allowed one. host is a bare host name or IP literal
// (brackets around IPv6 are accepted; a port is not). MatchesHost does not
// apply the scheme or private-network rules and never resolves names; an
// invalid host or an invalid literal Policy yields false.
func (p *Policy) MatchesHost(host string) (allowed bool) {
	r, err := p.compiled()
	if err != nil {
		return false
	}
	if len(host) > 2 && host[0] == '[' && host[len(host)-1] == ']' {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() {
			return false
		}
		host = host[1 : len(host)-1]
	}
	h, err := normalizeHost(host, false)
	if err != nil {
		return false
	}
	for i := range r.blocked {
		if r.blocked[i].match(&h) {
			return false
		}
	}
	if len(r.allowed) == 0 {
		return true
	}
	for i := range r.allowed {
		if r.allowed[i].match(&h) {
			return true
		}
	}
	return false
}

// isAboutBlank reports whether u is about:blank (query and fragment are
// ignored, as browsers do).
func isAboutBlank(u *url.URL) bool {
	if !strings.EqualFold(u.Scheme, "about") {
		return false
	}
	if u.Opaque != "" {
		return strings.EqualFold(u.Opaque, "blank")
	}
	return u.Host == "" && strings.EqualFold(u.Path, "blank")
}

// urlHost extracts and normalises the host of an http(s) URL.
func urlHost(u *url.URL) (host, error) {
	if u.Host == "" {
		return host{}, errors.New("missing host")
	}
	name := u.Hostname()
	if u.Host[0] == '[' {
		// Brackets are only for IPv6 literals.
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is6() {
			return host{}, fmt.Errorf("%q is not a valid IPv6 address", name)
		}
	} else if strings.IndexByte(name, ':') >= 0 {
		return host{}, fmt.Errorf("invalid host %q", u.Host)
	}
	return normalizeHost(name, false)
}

// isLocalhost reports whether a normalised host name is localhost or one of
// its subdomains, which browsers always resolve to loopback.
func isLocalhost(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
)

// isPrivateAddr reports whether a is an address the browser must not reach
// unless explicitly allowed: loopback, private, link-local, unspecified,
// "this network" or carrier-grade NAT, also in IPv4-mapped IPv6 form.
func isPrivateAddr(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsUnspecified() || cgnat.Contains(a) || thisNetwork.Contains(a)
}
