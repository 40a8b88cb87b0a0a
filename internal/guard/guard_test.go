package guard

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeResolver answers from a map and records the names it was asked for.
// Unknown names fail like NXDOMAIN.
type fakeResolver struct {
	addrs map[string][]netip.Addr
	errs  map[string]error

	mu    sync.Mutex
	calls []string
}

func newFakeResolver(records map[string]string) *fakeResolver {
	r := &fakeResolver{addrs: map[string][]netip.Addr{}, errs: map[string]error{}}
	for name, list := range records {
		r.addrs[name] = []netip.Addr{}
		for _, a := range strings.Fields(list) {
			r.addrs[name] = append(r.addrs[name], netip.MustParseAddr(a))
		}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.calls = append(r.calls, host)
	r.mu.Unlock()
	if network != "ip" {
		return nil, fmt.Errorf("unexpected network %q", network)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err, ok := r.errs[host]; ok {
		return nil, err
	}
	if a, ok := r.addrs[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("lookup %s: no such host", host)
}

func (r *fakeResolver) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// publicResolver resolves every name used in TestCheck to a public address,
// so that only the domain rules decide.
func publicResolver() *fakeResolver {
	return newFakeResolver(map[string]string{
		"example.com":           "93.184.215.14",
		"www.example.com":       "93.184.215.14",
		"a.b.example.com":       "93.184.215.14",
		"evil.com":              "203.0.113.9",
		"ads.evil.com":          "203.0.113.9",
		"xn--bcher-kva.de":      "198.51.100.7",
		"shop.xn--bcher-kva.de": "198.51.100.7",
		"other.org":             "198.51.100.8",
		"notexample.com":        "198.51.100.9",
	})
}

func mustNew(t testing.TB, allowed, blocked []string, allowPrivate bool) *Policy {
	t.Helper()
	p, err := New(allowed, blocked, allowPrivate)
	require.NoError(t, err)
	return p
}

func TestCheck(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name         string
		allowed      []string
		blocked      []string
		allowPrivate bool
		url          string
		reason       Reason // "" means allowed
		host         string // expected BlockedError.Host when refused
		pattern      string // expected BlockedError.Pattern when refused
	}{
		// Defaults.
		{name: "empty policy allows public host", url: "https://example.com/"},
		{name: "empty policy allows public IP", url: "http://93.184.215.14/"},

		// 1. Scheme.
		{name: "about:blank", url: "about:blank"},
		{name: "about:blank upper case", url: "ABOUT:BLANK"},
		{name: "about:blank with fragment", url: "about:blank#x"},
		{name: "about:blank beats allow list", allowed: []string{"example.com"}, url: "about:blank"},
		{name: "about:srcdoc refused", url: "about:srcdoc", reason: ReasonScheme},
		{name: "javascript refused", url: "javascript:alert(1)", reason: ReasonScheme},
		{name: "file refused", url: "file:///etc/passwd", reason: ReasonScheme},
		{name: "ftp refused", url: "ftp://example.com/", reason: ReasonScheme},
		{name: "data refused", url: "data:text/html,<h1>hi</h1>", reason: ReasonScheme},
		{name: "chrome refused", url: "chrome://settings", reason: ReasonScheme},
		{name: "no scheme refused", url: "example.com", reason: ReasonScheme},
		{name: "upper-case scheme", url: "HTTPS://example.com/"},

		// 2. Host.
		{name: "empty host", url: "http:///path", reason: ReasonInvalid},
		{name: "opaque http", url: "http:example.com", reason: ReasonInvalid},
		{name: "unparseable", url: "http://exa mple.com/", reason: ReasonInvalid},
		{name: "bad port", url: "http://example.com:port/", reason: ReasonInvalid},
		{name: "empty label", url: "http://example..com/", reason: ReasonInvalid},
		{name: "invalid character", url: "http://exa$mple.com/", reason: ReasonInvalid},
		{name: "bracketed non-IPv6", url: "http://[example.com]/", reason: ReasonInvalid},
		{name: "invalid numeric host", url: "http://1.2.3.256/", reason: ReasonInvalid},

		// 3. Blocked wins.
		{name: "blocked exact", blocked: []string{"evil.com"}, url: "https://evil.com/x", reason: ReasonBlocked, host: "evil.com", pattern: "evil.com"},
		{name: "blocked beats allowed", allowed: []string{"evil.com"}, blocked: []string{"evil.com"}, url: "https://evil.com/", reason: ReasonBlocked, host: "evil.com", pattern: "evil.com"},
		{name: "blocked beats allowed star", allowed: []string{"*"}, blocked: []string{"*.evil.com"}, url: "https://ads.evil.com/", reason: ReasonBlocked, host: "ads.evil.com", pattern: "*.evil.com"},
		{name: "blocked beats explicitly allowed private", allowed: []string{"localhost"}, blocked: []string{"localhost"}, url: "http://localhost/", reason: ReasonBlocked, pattern: "localhost"},
		{name: "blocked star", blocked: []string{"*"}, url: "https://example.com/", reason: ReasonBlocked, pattern: "*"},
		{name: "blocked wildcard spares apex", blocked: []string{"*.evil.com"}, url: "https://evil.com/"},
		{name: "blocked apex spares subdomain", blocked: []string{"evil.com"}, url: "https://ads.evil.com/"},
		{name: "blocked reports first matching pattern", blocked: []string{"other.org", "*.evil.com", "ads.evil.com"}, url: "https://ads.evil.com/", reason: ReasonBlocked, pattern: "*.evil.com"},
		{name: "blocked IP literal", blocked: []string{"203.0.113.9"}, url: "http://203.0.113.9:8080/", reason: ReasonBlocked, host: "203.0.113.9", pattern: "203.0.113.9"},
		{name: "blocked IP via mapped IPv6", blocked: []string{"203.0.113.9"}, url: "http://[::ffff:203.0.113.9]/", reason: ReasonBlocked, host: "203.0.113.9"},
		{name: "blocked IP via decimal host", blocked: []string{"203.0.113.9"}, url: "http://3405803785/", reason: ReasonBlocked, host: "203.0.113.9"},
		{name: "blocked IPv6", blocked: []string{"2001:db8::1"}, url: "http://[2001:DB8:0::1]/", reason: ReasonBlocked, host: "2001:db8::1"},
		{name: "blocked upper-case URL", blocked: []string{"evil.com"}, url: "https://EVIL.COM/", reason: ReasonBlocked, host: "evil.com"},
		{name: "blocked trailing-dot URL", blocked: []string{"evil.com"}, url: "https://evil.com./", reason: ReasonBlocked, host: "evil.com"},
		{name: "blocked trailing-dot pattern", blocked: []string{"EVIL.com."}, url: "https://evil.com/", reason: ReasonBlocked},
		{name: "blocked ignores port", blocked: []string{"evil.com"}, url: "https://evil.com:8443/", reason: ReasonBlocked},
		{name: "blocked ignores userinfo", blocked: []string{"evil.com"}, url: "https://example.com@evil.com/", reason: ReasonBlocked, host: "evil.com"},

		// 4. Allowed.
		{name: "allowed exact", allowed: []string{"example.com"}, url: "https://example.com/a?b#c"},
		{name: "allowed exact refuses subdomain", allowed: []string{"example.com"}, url: "https://www.example.com/", reason: ReasonNotAllowed, host: "www.example.com"},
		{name: "allowed exact refuses suffix lookalike", allowed: []string{"example.com"}, url: "https://notexample.com/", reason: ReasonNotAllowed},
		{name: "allowed wildcard matches subdomain", allowed: []string{"*.example.com"}, url: "https://www.example.com/"},
		{name: "allowed wildcard matches deep subdomain", allowed: []string{"*.example.com"}, url: "https://a.b.example.com/"},
		{name: "allowed wildcard refuses apex", allowed: []string{"*.example.com"}, url: "https://example.com/", reason: ReasonNotAllowed, host: "example.com"},
		{name: "allowed wildcard refuses suffix lookalike", allowed: []string{"*.example.com"}, url: "https://notexample.com/", reason: ReasonNotAllowed},
		{name: "allowed apex and wildcard", allowed: []string{"example.com", "*.example.com"}, url: "https://example.com/"},
		{name: "allowed star", allowed: []string{"*"}, url: "https://other.org/"},
		{name: "not allowed", allowed: []string{"example.com"}, url: "https://other.org/", reason: ReasonNotAllowed, host: "other.org"},
		{name: "allowed case-insensitive", allowed: []string{"Example.COM"}, url: "https://EXAMPLE.com/"},
		{name: "allowed trailing dot in URL", allowed: []string{"example.com"}, url: "https://example.com./"},
		{name: "allowed trailing dot in pattern", allowed: []string{"example.com."}, url: "https://example.com/"},
		{name: "allowed ignores port", allowed: []string{"example.com"}, url: "https://example.com:8443/"},
		{name: "IDN URL, IDN pattern", allowed: []string{"bücher.de"}, url: "https://bücher.de/"},
		{name: "IDN URL, punycode pattern", allowed: []string{"xn--bcher-kva.de"}, url: "https://BÜCHER.de/"},
		{name: "punycode URL, IDN pattern", allowed: []string{"bücher.de"}, url: "https://xn--bcher-kva.de/"},
		{name: "percent-encoded IDN URL", allowed: []string{"bücher.de"}, url: "https://b%C3%BCcher.de/"},
		{name: "IDN wildcard", allowed: []string{"*.bücher.de"}, url: "https://shop.bücher.de/"},
		{name: "IDN not allowed", allowed: []string{"example.com"}, url: "https://bücher.de/", reason: ReasonNotAllowed, host: "xn--bcher-kva.de"},
		{name: "IDN blocked", blocked: []string{"xn--bcher-kva.de"}, url: "https://bücher.de/", reason: ReasonBlocked},

		// 5. Private networks (IP literals and localhost; no DNS needed).
		{name: "loopback literal", url: "http://127.0.0.1:8080/", reason: ReasonPrivate, host: "127.0.0.1"},
		{name: "RFC1918 literal", url: "http://10.0.0.1/", reason: ReasonPrivate, host: "10.0.0.1"},
		{name: "RFC1918 172.16", url: "http://172.16.5.4/", reason: ReasonPrivate},
		{name: "RFC1918 192.168", url: "http://192.168.1.1/", reason: ReasonPrivate},
		{name: "link-local metadata", url: "http://169.254.169.254/latest/meta-data/", reason: ReasonPrivate},
		{name: "CGNAT", url: "http://100.64.1.1/", reason: ReasonPrivate},
		{name: "unspecified", url: "http://0.0.0.0/", reason: ReasonPrivate},
		{name: "this network", url: "http://0.1.2.3/", reason: ReasonPrivate},
		{name: "IPv6 loopback", url: "http://[::1]:3000/", reason: ReasonPrivate, host: "::1"},
		{name: "IPv6 unspecified", url: "http://[::]/", reason: ReasonPrivate},
		{name: "IPv6 ULA", url: "http://[fd12:3456::1]/", reason: ReasonPrivate},
		{name: "IPv6 link-local", url: "http://[fe80::1]/", reason: ReasonPrivate},
		{name: "IPv6 link-local with zone", url: "http://[fe80::1%25eth0]/", reason: ReasonPrivate, host: "fe80::1"},
		{name: "IPv4-mapped loopback", url: "http://[::ffff:127.0.0.1]/", reason: ReasonPrivate, host: "127.0.0.1"},
		{name: "decimal loopback", url: "http://2130706433/", reason: ReasonPrivate, host: "127.0.0.1"},
		{name: "hex loopback", url: "http://0x7f.1/", reason: ReasonPrivate, host: "127.0.0.1"},
		{name: "octal loopback", url: "http://0177.0.0.1/", reason: ReasonPrivate, host: "127.0.0.1"},
		{name: "short loopback", url: "http://127.1/", reason: ReasonPrivate, host: "127.0.0.1"},
		{name: "localhost", url: "http://localhost:3000/", reason: ReasonPrivate, host: "localhost"},
		{name: "LOCALHOST.", url: "http://LOCALHOST./", reason: ReasonPrivate, host: "localhost"},
		{name: "sub.localhost", url: "http://app.localhost/", reason: ReasonPrivate, host: "app.localhost"},
		{name: "public IPv6", url: "http://[2606:4700::1111]/"},
		{name: "public just outside CGNAT", url: "http://100.128.0.1/"},
		{name: "public just outside 172.16/12", url: "http://172.32.0.1/"},
		{name: "star does not unlock private", allowed: []string{"*"}, url: "http://10.0.0.1/", reason: ReasonPrivate},
		{name: "wildcard does not unlock localhost subdomain", allowed: []string{"*.localhost"}, url: "http://app.localhost/", reason: ReasonPrivate},
		{name: "explicit IP unlocks", allowed: []string{"10.0.0.1"}, url: "http://10.0.0.1:8080/"},
		{name: "explicit IP unlocks only itself", allowed: []string{"10.0.0.1", "*"}, url: "http://10.0.0.2/", reason: ReasonPrivate},
		{name: "explicit IPv6 unlocks", allowed: []string{"[::1]"}, url: "http://[::1]/"},
		{name: "explicit IPv6 unbracketed unlocks", allowed: []string{"::1"}, url: "http://[0:0::1]/"},
		{name: "explicit IPv4 unlocks mapped form", allowed: []string{"127.0.0.1"}, url: "http://[::ffff:7f00:1]/"},
		{name: "explicit localhost unlocks", allowed: []string{"localhost"}, url: "http://localhost:3000/"},
		{name: "explicit localhost after wildcard unlocks", allowed: []string{"*", "localhost"}, url: "http://localhost/"},
		{name: "explicit localhost does not unlock 127.0.0.1", allowed: []string{"localhost", "*"}, url: "http://127.0.0.1/", reason: ReasonPrivate},
		{name: "AllowPrivate literal", allowPrivate: true, url: "http://10.0.0.1/"},
		{name: "AllowPrivate localhost", allowPrivate: true, url: "http://localhost/"},
		{name: "AllowPrivate still applies allow list", allowPrivate: true, allowed: []string{"example.com"}, url: "http://10.0.0.1/", reason: ReasonNotAllowed},
		{name: "AllowPrivate still applies block list", allowPrivate: true, blocked: []string{"10.0.0.1"}, url: "http://10.0.0.1/", reason: ReasonBlocked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, tc.allowed, tc.blocked, tc.allowPrivate).WithResolver(publicResolver())
			err := p.Check(context.Background(), tc.url)
			if tc.reason == "" {
				require.NoError(t, err)
				return
			}
			var be *BlockedError
			require.ErrorAs(t, err, &be)
			require.Equal(t, tc.reason, be.Reason, "error: %v", err)
			require.ErrorIs(t, err, ErrBlocked)
			if tc.host != "" {
				require.Equal(t, tc.host, be.Host)
			}
			if tc.pattern != "" {
				require.Equal(t, tc.pattern, be.Pattern)
			}
			if tc.reason != ReasonBlocked {
				require.Empty(t, be.Pattern)
			}
		})
	}
}

func TestCheckPrivateResolution(t *testing.T) {
	t.Parallel()

	records := map[string]string{
		"internal.corp":    "10.1.2.3",
		"dev.local.test":   "127.0.0.1",
		"public.test":      "93.184.215.14",
		"v6.public.test":   "2606:4700::1111",
		"dual.test":        "93.184.215.14 192.168.1.10",
		"mapped.test":      "::ffff:10.0.0.7",
		"ula.test":         "fd00::1",
		"cgnat.test":       "100.100.100.100",
		"metadata.test":    "169.254.169.254",
		"empty.test":       "",
		"app.example.test": "172.20.0.5",
	}

	tests := []struct {
		name         string
		allowed      []string
		allowPrivate bool
		url          string
		reason       Reason // "" means allowed
		detail       string // private address expected in the message
		lookups      []string
	}{
		{name: "name resolving to 10.x refused", url: "https://internal.corp/", reason: ReasonPrivate, detail: "10.1.2.3", lookups: []string{"internal.corp"}},
		{name: "name resolving to public allowed", url: "https://public.test/", lookups: []string{"public.test"}},
		{name: "name resolving to public IPv6 allowed", url: "https://v6.public.test/", lookups: []string{"v6.public.test"}},
		{name: "any private answer refuses", url: "https://dual.test/", reason: ReasonPrivate, detail: "192.168.1.10", lookups: []string{"dual.test"}},
		{name: "IPv4-mapped private answer refused", url: "https://mapped.test/", reason: ReasonPrivate, detail: "10.0.0.7", lookups: []string{"mapped.test"}},
		{name: "ULA answer refused", url: "https://ula.test/", reason: ReasonPrivate, detail: "fd00::1", lookups: []string{"ula.test"}},
		{name: "CGNAT answer refused", url: "https://cgnat.test/", reason: ReasonPrivate, lookups: []string{"cgnat.test"}},
		{name: "link-local answer refused", url: "https://metadata.test/", reason: ReasonPrivate, lookups: []string{"metadata.test"}},
		{name: "empty answer allowed", url: "https://empty.test/", lookups: []string{"empty.test"}},
		{name: "DNS error allowed", url: "https://nxdomain.test/", lookups: []string{"nxdomain.test"}},
		{name: "lookup uses normalised name", url: "https://INTERNAL.corp./", reason: ReasonPrivate, lookups: []string{"internal.corp"}},
		{name: "explicitly allowed name resolving to loopback allowed", allowed: []string{"dev.local.test"}, url: "http://dev.local.test:8080/"},
		{name: "explicitly allowed name among others", allowed: []string{"public.test", "*.local.test", "dev.local.test"}, url: "http://dev.local.test/"},
		{name: "wildcard allowed name resolving to loopback refused", allowed: []string{"*.local.test"}, url: "http://dev.local.test/", reason: ReasonPrivate, lookups: []string{"dev.local.test"}},
		{name: "star allowed does not unlock private", allowed: []string{"*"}, url: "https://internal.corp/", reason: ReasonPrivate, lookups: []string{"internal.corp"}},
		{name: "star allowed public", allowed: []string{"*"}, url: "https://public.test/", lookups: []string{"public.test"}},
		{name: "AllowPrivate allows without lookup", allowPrivate: true, url: "https://internal.corp/"},
		{name: "AllowPrivate with wildcard", allowPrivate: true, allowed: []string{"*.example.test"}, url: "https://app.example.test/"},
		{name: "IP literal never resolved", url: "http://93.184.215.14/"},
		{name: "localhost never resolved", url: "http://localhost/", reason: ReasonPrivate},
		{name: "not allowed never resolved", allowed: []string{"public.test"}, url: "https://internal.corp/", reason: ReasonNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := newFakeResolver(records)
			p := mustNew(t, tc.allowed, nil, tc.allowPrivate).WithResolver(res)
			err := p.Check(context.Background(), tc.url)
			if tc.reason == "" {
				require.NoError(t, err)
			} else {
				var be *BlockedError
				require.ErrorAs(t, err, &be)
				require.Equal(t, tc.reason, be.Reason, "error: %v", err)
				if tc.detail != "" {
					require.ErrorContains(t, err, "resolves to private network address "+tc.detail)
				}
			}
			require.Equal(t, tc.lookups, res.Calls())
		})
	}
}

func TestCheckContextCanceled(t *testing.T) {
	t.Parallel()

	p := mustNew(t, nil, nil, false).WithResolver(newFakeResolver(nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := p.Check(ctx, "https://example.com/")
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrBlocked)

	// No lookup, no context use.
	require.NoError(t, p.Check(ctx, "https://93.184.215.14/"))
}

func TestCheckURL(t *testing.T) {
	t.Parallel()

	p := mustNew(t, []string{"example.com"}, nil, false).WithResolver(publicResolver())
	ctx := context.Background()

	require.NoError(t, p.CheckURL(ctx, &url.URL{Scheme: "https", Host: "Example.com:443", Path: "/x"}))
	require.NoError(t, p.CheckURL(ctx, &url.URL{Scheme: "about", Opaque: "blank"}))
	require.NoError(t, p.CheckURL(ctx, &url.URL{Scheme: "about", Path: "blank"}))

	reason := func(err error) Reason {
		t.Helper()
		var be *BlockedError
		require.ErrorAs(t, err, &be)
		return be.Reason
	}
	require.Equal(t, ReasonInvalid, reason(p.CheckURL(ctx, nil)))
	require.Equal(t, ReasonInvalid, reason(p.CheckURL(ctx, &url.URL{Scheme: "https", Path: "/x"})))
	require.Equal(t, ReasonInvalid, reason(p.CheckURL(ctx, &url.URL{Scheme: "https", Host: "::1"})))
	require.Equal(t, ReasonScheme, reason(p.CheckURL(ctx, &url.URL{Scheme: "ws", Host: "example.com"})))
	require.Equal(t, ReasonNotAllowed, reason(p.CheckURL(ctx, &url.URL{Scheme: "https", Host: "other.org"})))

	// Passwords are redacted from the reported URL.
	err := p.CheckURL(ctx, &url.URL{Scheme: "https", Host: "other.org", User: url.UserPassword("u", "secret")})
	require.NotContains(t, err.Error(), "secret")
	err = p.Check(ctx, "https://u:secret@other.org/")
	require.NotContains(t, err.Error(), "secret")
	var be *BlockedError
	require.ErrorAs(t, err, &be)
	require.NotContains(t, be.URL, "secret")
}

func TestBlockedError(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	res := newFakeResolver(map[string]string{"intranet.test": "10.9.8.7", "example.com": "93.184.215.14"})

	tests := []struct {
		name    string
		allowed []string
		blocked []string
		url     string
		want    string
	}{
		{
			name: "private literal",
			url:  "http://10.0.0.1/",
			want: `navigation to "http://10.0.0.1/" blocked: 10.0.0.1 is a private network address (allow it with allowed_domains or WAYFINDER_ALLOW_PRIVATE_NETWORKS=true)`,
		},
		{
			name: "private resolved",
			url:  "http://intranet.test/",
			want: `navigation to "http://intranet.test/" blocked: intranet.test resolves to private network address 10.9.8.7 (allow it with allowed_domains or WAYFINDER_ALLOW_PRIVATE_NETWORKS=true)`,
		},
		{
			name:    "blocked",
			blocked: []string{"*.example.com"},
			url:     "https://WWW.example.com/",
			want:    `navigation to "https://WWW.example.com/" blocked: www.example.com matches blocked_domains pattern "*.example.com"`,
		},
		{
			name:    "not allowed",
			allowed: []string{"example.com"},
			url:     "https://other.org/",
			want:    `navigation to "https://other.org/" blocked: other.org does not match any allowed_domains pattern`,
		},
		{
			name: "scheme",
			url:  "file:///etc/passwd",
			want: `navigation to "file:///etc/passwd" blocked: scheme "file" is not allowed (only http and https are)`,
		},
		{
			name: "no scheme",
			url:  "example.com",
			want: `navigation to "example.com" blocked: the URL has no scheme (only http and https are allowed)`,
		},
		{
			name: "invalid",
			url:  "http://exa mple.com/",
			want: `navigation to "http://exa mple.com/" blocked: invalid URL: invalid character " " in host name`,
		},
		{
			name: "missing host",
			url:  "https:///x",
			want: `navigation to "https:///x" blocked: invalid URL: missing host`,
		},
		{
			name: "long URL truncated",
			url:  "data:text/plain," + strings.Repeat("a", 1000),
			want: `navigation to "data:text/plain,` + strings.Repeat("a", 200-len("data:text/plain,")) + `..." blocked: scheme "data" is not allowed (only http and https are)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustNew(t, tc.allowed, tc.blocked, false).WithResolver(res)
			err := p.Check(ctx, tc.url)
			require.Error(t, err)
			require.Equal(t, tc.want, err.Error())
			require.ErrorIs(t, err, ErrBlocked)
			require.ErrorIs(t, fmt.Errorf("start url: %w", err), ErrBlocked)
			var be *BlockedError
			require.ErrorAs(t, fmt.Errorf("start url: %w", err), &be)
			require.Equal(t, tc.url, be.URL)
		})
	}

	t.Run("Is", func(t *testing.T) {
		t.Parallel()
		require.ErrorIs(t, &BlockedError{Reason: ReasonScheme}, ErrBlocked)
		require.ErrorIs(t, &BlockedError{}, ErrBlocked)
		require.NotErrorIs(t, &BlockedError{}, errors.New("blocked by domain policy"))
		require.NotErrorIs(t, errors.New("x"), ErrBlocked)
		var nilPolicyErr error = &PatternError{Err: errors.New("x")}
		require.NotErrorIs(t, nilPolicyErr, ErrBlocked)
	})
}

func TestNewPatternErrors(t *testing.T) {
	t.Parallel()

	allowed := []string{"example.com", "*.example.com", "a.*.com", "https://x.com"}
	blocked := []string{"evil.com:80", "ok.org"}
	p, err := New(allowed, blocked, false)
	require.Nil(t, p)
	require.Error(t, err)

	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "New must return errors.Join of *PatternError")
	errs := joined.Unwrap()
	require.Len(t, errs, 3)

	want := []struct {
		field, pattern, msg string
		index               int
	}{
		{"allowed_domains", "a.*.com", `"*" is only allowed`, 2},
		{"allowed_domains", "https://x.com", `remove the scheme "https://"`, 3},
		{"blocked_domains", "evil.com:80", "port", 0},
	}
	for i, w := range want {
		var pe *PatternError
		require.ErrorAs(t, errs[i], &pe)
		require.Equal(t, w.field, pe.Field)
		require.Equal(t, w.index, pe.Index)
		require.Equal(t, w.pattern, pe.Pattern)
		require.ErrorContains(t, pe.Err, w.msg)
		require.Equal(t, ValidatePattern(w.pattern).Error(), pe.Err.Error())
		require.ErrorIs(t, pe, pe.Err)
		require.True(t, strings.HasPrefix(pe.Error(), fmt.Sprintf("%s[%d]: invalid domain pattern %q: ", w.field, w.index, w.pattern)), pe.Error())
	}
	require.Contains(t, err.Error(), `allowed_domains[2]: invalid domain pattern "a.*.com"`)
	require.Contains(t, err.Error(), `blocked_domains[0]: invalid domain pattern "evil.com:80"`)
	require.NotErrorIs(t, err, ErrBlocked)

	var pe *PatternError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 2, pe.Index)
}

func TestNewCopiesConfiguration(t *testing.T) {
	t.Parallel()

	allowed := []string{"example.com"}
	p := mustNew(t, allowed, nil, true)
	allowed[0] = "other.org"
	require.Equal(t, []string{"example.com"}, p.Allowed)
	require.True(t, p.AllowPrivate)
	require.True(t, p.MatchesHost("example.com"))
	require.False(t, p.MatchesHost("other.org"))
}

func TestLiteralPolicy(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	p := (&Policy{Allowed: []string{"example.com"}, Blocked: []string{"*.example.com"}}).WithResolver(publicResolver())
	require.NoError(t, p.Check(ctx, "https://example.com/"))
	require.ErrorIs(t, p.Check(ctx, "https://www.example.com/"), ErrBlocked)
	require.ErrorIs(t, p.Check(ctx, "https://other.org/"), ErrBlocked)

	bad := &Policy{Allowed: []string{"a.*.com"}}
	err := bad.Check(ctx, "https://example.com/")
	var pe *PatternError
	require.ErrorAs(t, err, &pe)
	require.False(t, bad.MatchesHost("example.com"))
}

func TestWithResolverCopies(t *testing.T) {
	t.Parallel()

	base := mustNew(t, nil, nil, false)
	r := newFakeResolver(map[string]string{"x.test": "10.0.0.1"})
	withFake := base.WithResolver(r)
	require.NotSame(t, base, withFake)
	require.Nil(t, base.resolver)
	require.ErrorIs(t, withFake.Check(context.Background(), "http://x.test/"), ErrBlocked)
	require.Equal(t, []string{"x.test"}, r.Calls())
	require.Nil(t, withFake.WithResolver(nil).resolver)
}

func TestMatchesHost(t *testing.T) {
	t.Parallel()

	p := mustNew(t, []string{"example.com", "*.example.com", "10.0.0.1", "::1", "bücher.de"}, []string{"bad.example.com"}, false)
	tests := []struct {
		host string
		want bool
	}{
		{"example.com", true},
		{"EXAMPLE.COM.", true},
		{"www.example.com", true},
		{"bad.example.com", false},
		{"x.bad.example.com", true},
		{"other.org", false},
		{"10.0.0.1", true},
		{"::1", true},
		{"[::1]", true},
		{"[10.0.0.1]", false},
		{"::ffff:10.0.0.1", true},
		{"xn--bcher-kva.de", true},
		{"BÜCHER.DE", true},
		{"example.com:80", false},
		{"", false},
		{"exa mple.com", false},
		{"localhost", false},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, p.MatchesHost(tc.host))
		})
	}

	open := mustNew(t, nil, nil, false)
	require.True(t, open.MatchesHost("anything.test"))
	require.True(t, open.MatchesHost("10.0.0.1"), "MatchesHost ignores the private-network rule")
}

func TestCheckAllocations(t *testing.T) {
	// Not parallel: testing.AllocsPerRun counts the allocations of the whole
	// process, so it must not overlap with the parallel tests.
	patterns := make([]string, 0, 20)
	for i := range 19 {
		patterns = append(patterns, fmt.Sprintf("*.site%d.example", i))
	}
	patterns = append(patterns, "target.test")
	p := mustNew(t, patterns, []string{"bad.test"}, false).WithResolver(newStaticResolver("93.184.215.14"))
	u, err := url.Parse("https://target.test/path")
	require.NoError(t, err)
	ctx := context.Background()

	allocs := testing.AllocsPerRun(100, func() {
		if err := p.CheckURL(ctx, u); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "CheckURL on an allowed host must not allocate")
}
