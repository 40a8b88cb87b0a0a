package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/wayfinder/wayfinder/internal/guard"
)

// errUnresolved means the policy passed a host whose name could not be
// resolved; the proxy answers 502 rather than resolve it a second time.
var errUnresolved = errors.New("cannot resolve host")

// target is a checked destination: the addresses the policy saw, which are
// the only ones the proxy will dial for this request.
type target struct {
	addrs []netip.Addr
	port  string
}

// lookup is a [guard.Resolver] that remembers the answer it gave, so the
// proxy dials exactly the addresses the policy approved and never asks DNS
// twice (a second answer could differ: DNS rebinding).
type lookup struct {
	base  guard.Resolver
	done  bool
	addrs []netip.Addr
	err   error
}

// LookupNetIP implements guard.Resolver.
func (l *lookup) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	l.done = true
	l.addrs, l.err = l.base.LookupNetIP(ctx, network, host)
	return l.addrs, l.err
}

// resolve applies the policy to u and returns where to connect. A refusal
// is a *guard.BlockedError; a host that does not resolve wraps
// errUnresolved; otherwise the error is ctx's.
func (p *Proxy) resolve(ctx context.Context, u *url.URL) (target, error) {
	l := &lookup{base: p.resolver}
	if err := p.policy.WithResolver(l).CheckURL(ctx, u); err != nil {
		return target{}, err
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "443"
		if strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "ws") {
			port = "80"
		}
	}
	t := target{port: port}
	if a, err := netip.ParseAddr(host); err == nil {
		t.addrs = []netip.Addr{a}
		return t, nil
	}
	if looksNumeric(host) {
		// A host browsers read as an IPv4 number in a non-canonical spelling
		// ("0x7f.1"). Chromium always sends the canonical form; anything else
		// is refused rather than handed to a resolver that may read it
		// differently from the policy.
		return target{}, &guard.BlockedError{URL: u.Redacted(), Reason: guard.ReasonInvalid}
	}
	addrs, err := l.addrs, l.err
	if !l.done {
		// The policy did not need the addresses (private networks allowed,
		// or the host named explicitly), so every answer is acceptable.
		addrs, err = p.resolver.LookupNetIP(ctx, "ip", host)
	}
	if err == nil && len(addrs) == 0 {
		err = errors.New("no addresses")
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return target{}, cerr
		}
		return target{}, fmt.Errorf("%w %s: %w", errUnresolved, host, err)
	}
	t.addrs = addrs
	return t, nil
}

// looksNumeric reports whether the last label of host is a number (decimal
// or 0x-hex), which makes URL parsers read the whole host as IPv4.
func looksNumeric(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if h, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		last = h
		for _, c := range last {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	if last == "" {
		return false
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// dial connects to the first of t's addresses that answers.
func (p *Proxy) dial(ctx context.Context, t target) (net.Conn, error) {
	var errs []error
	for _, a := range t.addrs {
		addr := net.JoinHostPort(a.WithZone("").Unmap().String(), t.port)
		dctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
		c, err := p.dialFunc(dctx, "tcp", addr)
		cancel()
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("connect: %w", errors.Join(errs...))
}

// targetKey carries a checked target from the handler to the transport's
// dialer.
type targetKey struct{}

// dialContext is the transport's dialer: it connects only to a target the
// handler checked, never to the address the transport names.
func (p *Proxy) dialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	t, ok := ctx.Value(targetKey{}).(target)
	if !ok {
		return nil, errors.New("netguard: dial without a checked target")
	}
	return p.dial(ctx, t)
}

// maxCachedHosts bounds a dnsCache.
const maxCachedHosts = 1024

// dnsCache remembers successful answers for a while, as Chromium's own host
// cache would have: without a proxy the browser resolves a name once for
// many requests, and a lookup per request would cost every subresource a
// DNS round trip. The cached answer is both what the policy checks and what
// the proxy dials, so caching never lets a changed answer through; it only
// pins the first one for ttl.
type dnsCache struct {
	base guard.Resolver
	ttl  time.Duration
	now  func() time.Time

	mu      sync.Mutex
	entries map[string]dnsEntry
}

type dnsEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

// LookupNetIP implements guard.Resolver.
func (c *dnsCache) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	key := network + " " + host
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.addrs, nil
	}
	addrs, err := c.base.LookupNetIP(ctx, network, host)
	if err != nil || len(addrs) == 0 {
		return addrs, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedHosts {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCachedHosts {
			clear(c.entries)
		}
	}
	c.entries[key] = dnsEntry{addrs: addrs, expires: now.Add(c.ttl)}
	return addrs, nil
}
