package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"golang.org/x/net/http/httpguts"

	"github.com/wayfinder/wayfinder/internal/guard"
)

// ErrNetworkRules: StartNetwork was given rules it cannot apply.
var ErrNetworkRules = errors.New("invalid network rules")

// NetworkRules are what the CDP side of the network guard applies to every
// page of a Session: what the run's proxy cannot do because it never sees
// the request (file: URLs) or cannot see inside it (headers of HTTPS
// requests), plus the context's starting cookies and localStorage.
type NetworkRules struct {
	// Headers are extra request headers for matching domains. Default none.
	Headers []HeaderRule
	// Cookies are stored in the context before StartNetwork returns.
	// Default none.
	Cookies []NetworkCookie
	// LocalStorage entries are written for their origins before
	// StartNetwork returns, without any request reaching the network.
	// Default none.
	LocalStorage []OriginStorage
	// OnBlock is told of every request the browser itself refused (file:
	// URLs), from a background goroutine. Default: none.
	OnBlock func(BlockedRequest)
	// OnDocument is told the status of every top-level document response
	// (a page's or popup's navigation, each redirect hop included; iframes
	// excluded) from a host matching DocumentDomains, before the page
	// receives it, from a background goroutine. Default: none.
	OnDocument func(DocumentResponse)
	// DocumentDomains are the domain patterns OnDocument watches. Default
	// none.
	DocumentDomains []string
}

// DocumentResponse is a top-level document response NetworkRules.OnDocument
// is told of.
type DocumentResponse struct {
	// TargetID is the page's target (Page.TargetID).
	TargetID string
	// URL is the document's URL.
	URL string
	// Status is the HTTP status code.
	Status int
}

// HeaderFuncTimeout bounds one call of a HeaderRule's Func.
const HeaderFuncTimeout = 30 * time.Second

// HeaderRule adds headers to the requests sent to some domains.
type HeaderRule struct {
	// Domains are domain patterns as in allowed_domains ("example.com",
	// "*.example.com", "*"); at least one. A request gets the headers when
	// its host matches one of them, on every hop of a redirect chain
	// separately, so a redirect to another domain never carries them.
	Domains []string
	// Headers are set on the request, replacing a header of the same name
	// the page sent. When several rules match, later rules win.
	Headers map[string]string
	// Func, when set, is called for every request whose host matches
	// Domains, while the request waits, with a context that ends after
	// HeaderFuncTimeout; the headers it returns are set after Headers (so
	// they win). Invalid names or values are dropped; nil adds nothing. It
	// is called from several goroutines at once. Default none.
	Func func(ctx context.Context, u *url.URL) map[string]string
}

// NetworkCookie is a cookie to store in the context.
type NetworkCookie struct {
	// Name of the cookie; required.
	Name string
	// Value of the cookie.
	Value string
	// URL the cookie belongs to: a host-only cookie for its host (and a
	// secure one when it is https). Either URL or Domain is required.
	URL string
	// Domain makes a domain cookie, sent to the domain and its subdomains.
	Domain string
	// Path defaults to "/".
	Path string
	// Secure and HTTPOnly are the cookie's attributes.
	Secure, HTTPOnly bool
	// SameSite is "Strict", "Lax", "None" or empty (the browser's default).
	SameSite string
	// Expires is the expiry; zero makes a session cookie.
	Expires time.Time
}

// OriginStorage is the localStorage entries of one origin.
type OriginStorage struct {
	// Origin is "https://app.example.com" or "http://host:port"; required.
	Origin string
	// Items are the keys and values to store.
	Items map[string]string
}

// BlockedRequest is a request the browser refused under the network rules.
type BlockedRequest struct {
	// URL is the refused URL.
	URL string
	// Err is the policy's refusal (Reason scheme_blocked for file: URLs).
	Err *guard.BlockedError
	// Navigation is true for a document load, false for a subresource.
	Navigation bool
}

// compiledRule is a HeaderRule ready for matching.
type compiledRule struct {
	domains *guard.Policy
	headers map[string]string // canonical names
	fn      func(ctx context.Context, u *url.URL) map[string]string
}

// compiledRules are NetworkRules ready for matching.
type compiledRules struct {
	headers []compiledRule
	// documents are the domains whose top-level document statuses are
	// reported; nil for none.
	documents *guard.Policy
}

// compileRules validates rules and compiles the header rules.
func compileRules(rules NetworkRules) (compiledRules, error) {
	var errs []error
	var out compiledRules
	for i, r := range rules.Headers {
		if len(r.Domains) == 0 {
			errs = append(errs, fmt.Errorf("headers[%d]: no domains", i))
			continue
		}
		pol, err := guard.New(r.Domains, nil, true)
		if err != nil {
			errs = append(errs, fmt.Errorf("headers[%d]: %w", i, err))
			continue
		}
		cr := compiledRule{domains: pol, headers: make(map[string]string, len(r.Headers)), fn: r.Func}
		for name, value := range r.Headers {
			if !httpguts.ValidHeaderFieldName(name) || !httpguts.ValidHeaderFieldValue(value) {
				errs = append(errs, fmt.Errorf("headers[%d]: invalid header %q", i, name))
				continue
			}
			cr.headers[http.CanonicalHeaderKey(name)] = value
		}
		out.headers = append(out.headers, cr)
	}
	if rules.OnDocument != nil && len(rules.DocumentDomains) > 0 {
		pol, err := guard.New(rules.DocumentDomains, nil, true)
		if err != nil {
			errs = append(errs, fmt.Errorf("document_domains: %w", err))
		}
		out.documents = pol
	}
	for i, c := range rules.Cookies {
		if c.Name == "" || (c.URL == "" && c.Domain == "") {
			errs = append(errs, fmt.Errorf("cookies[%d]: a cookie needs a name and a url or a domain", i))
		}
	}
	for i, s := range rules.LocalStorage {
		if _, err := parseOrigin(s.Origin); err != nil {
			errs = append(errs, fmt.Errorf("local_storage[%d]: %w", i, err))
		}
	}
	if len(errs) > 0 {
		return compiledRules{}, fmt.Errorf("%w: %w", ErrNetworkRules, errors.Join(errs...))
	}
	return out, nil
}

// parseOrigin accepts "scheme://host[:port]" with an http or https scheme
// and nothing after the host but an optional "/".
func parseOrigin(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("origin %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("origin %q is not scheme://host[:port] with http or https", s)
	}
	return u, nil
}

// Network is the CDP side of a Session's network guard, started by
// [Session.StartNetwork]. Close it before releasing the Session.
type Network struct {
	s          *Session
	rules      compiledRules
	onBlock    func(BlockedRequest)
	onDocument func(DocumentResponse)
	// schemes refuses every URL that is not http(s): the verdict and its
	// error text come from the guard, the one place that defines them.
	schemes *guard.Policy
	att     *attacher
}

// StartNetwork applies rules to the session: it stores the cookies, seeds
// localStorage, and from then on attaches to every page of the context
// (popups included, paused until the rules are in place) to refuse file:
// URLs and add the header rules' headers. Start it before opening pages.
//
// Domain policy itself is the run's proxy's job (SessionOptions.ProxyServer);
// StartNetwork covers what never reaches it. It returns an error wrapping
// ErrNetworkRules for invalid rules.
func (s *Session) StartNetwork(ctx context.Context, rules NetworkRules) (*Network, error) {
	compiled, err := compileRules(rules)
	if err != nil {
		return nil, err
	}
	schemes, err := guard.New(nil, nil, true)
	if err != nil {
		return nil, fmt.Errorf("scheme policy: %w", err)
	}
	n := &Network{s: s, rules: compiled, onBlock: rules.OnBlock, onDocument: rules.OnDocument, schemes: schemes}
	if err := n.setCookies(ctx, rules.Cookies); err != nil {
		return nil, err
	}
	n.att, err = startAttacher(ctx, s.b, n)
	if err != nil {
		return nil, err
	}
	for _, st := range rules.LocalStorage {
		if err := n.seedStorage(ctx, st); err != nil {
			_ = n.Close()
			return nil, err
		}
	}
	s.network.Store(n)
	return n, nil
}

// Close stops attaching to new pages and lets the pages already attached
// go on without the rules. It is safe to call more than once.
func (n *Network) Close() error {
	return n.att.stop()
}

func (n *Network) setCookies(ctx context.Context, cookies []NetworkCookie) error {
	return storeCookies(ctx, n.s.b, cookies)
}

// storeCookies stores cookies in the browser context of b.
func storeCookies(ctx context.Context, b *rod.Browser, cookies []NetworkCookie) error {
	if len(cookies) == 0 {
		return nil
	}
	params := make([]*proto.NetworkCookieParam, 0, len(cookies))
	for _, c := range cookies {
		p := &proto.NetworkCookieParam{
			Name: c.Name, Value: c.Value, URL: c.URL, Domain: c.Domain, Path: c.Path,
			Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: proto.NetworkCookieSameSite(c.SameSite),
		}
		if p.Path == "" {
			p.Path = "/"
		}
		if p.Domain != "" && !strings.HasPrefix(p.Domain, ".") {
			// Without the dot Chromium makes a host-only cookie.
			p.Domain = "." + p.Domain
		}
		if !c.Expires.IsZero() {
			p.Expires = proto.TimeSinceEpoch(float64(c.Expires.UnixMilli()) / 1000)
		}
		params = append(params, p)
	}
	err := proto.StorageSetCookies{Cookies: params, BrowserContextID: b.BrowserContextID}.Call(b.Context(ctx))
	if err != nil {
		return classify(fmt.Errorf("set cookies: %w", err))
	}
	return nil
}

// seedStorage writes st's items into the context's localStorage for its
// origin. localStorage can only be written from a document of the origin,
// so a scratch page loads the origin with the document served by the
// browser itself (Fetch.fulfillRequest): nothing reaches the network.
func (n *Network) seedStorage(ctx context.Context, st OriginStorage) (err error) {
	origin, _ := parseOrigin(st.Origin) // validated by compileRules
	b := n.s.b.Context(ctx)
	p, err := b.Page(proto.TargetCreateTarget{URL: "about:blank"})
	if err != nil {
		return classify(fmt.Errorf("seed localStorage of %s: open page: %w", st.Origin, err))
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if cerr := p.Context(cctx).Close(); cerr != nil && err == nil {
			err = classify(fmt.Errorf("seed localStorage of %s: close page: %w", st.Origin, cerr))
		}
	}()
	p = p.Context(ctx)
	target := origin.Scheme + "://" + origin.Host + "/"
	if err := (proto.FetchEnable{Patterns: []*proto.FetchRequestPattern{{URLPattern: "*"}}}).Call(p); err != nil {
		return classify(fmt.Errorf("seed localStorage of %s: %w", st.Origin, err))
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan struct{})
	sb := n.s.b.Context(serveCtx)
	events := sb.Event() // subscribed before the navigation starts
	go func() {
		defer close(served)
		serveOrigin(sb, events, p.SessionID, target)
	}()
	defer func() {
		stopServing()
		<-served
	}()
	if err := p.Navigate(target); err != nil {
		return classify(fmt.Errorf("seed localStorage of %s: load origin: %w", st.Origin, err))
	}
	if err := p.WaitLoad(); err != nil {
		return classify(fmt.Errorf("seed localStorage of %s: load origin: %w", st.Origin, err))
	}
	items, err := json.Marshal(st.Items)
	if err != nil {
		return fmt.Errorf("seed localStorage of %s: %w", st.Origin, err)
	}
	_, err = p.Evaluate(rod.Eval(`(origin, items) => {
		if (location.origin !== origin) throw new Error("loaded " + location.origin);
		for (const [k, v] of Object.entries(JSON.parse(items))) localStorage.setItem(k, v);
	}`, origin.Scheme+"://"+origin.Host, string(items)).ByUser())
	if err != nil {
		return classify(fmt.Errorf("seed localStorage of %s: %w", st.Origin, err))
	}
	return nil
}

// serveOrigin answers the requests of the page with session id: an empty
// document for target, a refusal for anything else, until events ends.
func serveOrigin(b *rod.Browser, events <-chan *rod.Message, id proto.TargetSessionID, target string) {
	page := &cdpSession{b: b, id: id, ctx: b.GetContext()}
	for msg := range events {
		var e proto.FetchRequestPaused
		if msg.SessionID != id || !msg.Load(&e) {
			continue
		}
		if e.Request.URL == target {
			_ = proto.FetchFulfillRequest{
				RequestID: e.RequestID, ResponseCode: 200,
				ResponseHeaders: []*proto.FetchHeaderEntry{{Name: "Content-Type", Value: "text/html"}},
				Body:            []byte("<!doctype html><title>wayfinder</title>"),
			}.Call(page)
			continue
		}
		_ = proto.FetchFailRequest{RequestID: e.RequestID, ErrorReason: proto.NetworkErrorReasonBlockedByClient}.Call(page)
	}
}

// headersFor returns the rules' headers for a request to rawURL (nil when
// no rule matches), merged over the page's own headers. Rules with a Func
// are asked with ctx.
func (n *Network) headersFor(ctx context.Context, rawURL string, sent proto.NetworkHeaders) []*proto.FetchHeaderEntry {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil
	}
	var add map[string]string
	set := func(k, v string) {
		if add == nil {
			add = map[string]string{}
		}
		add[k] = v
	}
	for _, r := range n.rules.headers {
		if !r.domains.MatchesHost(u.Hostname()) {
			continue
		}
		for k, v := range r.headers {
			set(k, v)
		}
		if r.fn == nil {
			continue
		}
		for k, v := range r.fn(ctx, u) {
			if httpguts.ValidHeaderFieldName(k) && httpguts.ValidHeaderFieldValue(v) {
				set(http.CanonicalHeaderKey(k), v)
			}
		}
	}
	if add == nil {
		return nil
	}
	out := make([]*proto.FetchHeaderEntry, 0, len(sent)+len(add))
	for k, v := range sent {
		if _, replaced := add[http.CanonicalHeaderKey(k)]; !replaced {
			out = append(out, &proto.FetchHeaderEntry{Name: k, Value: v.Str()})
		}
	}
	for k, v := range add {
		out = append(out, &proto.FetchHeaderEntry{Name: k, Value: v})
	}
	return out
}
