package netguard_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/netguard"
)

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello from "+r.Host)
	})
}

func TestProxyPolicy(t *testing.T) {
	t.Parallel()
	answers := map[string][]string{
		"allowed.test":     {"127.0.0.1"},
		"ads.allowed.test": {"127.0.0.1"},
		"other.test":       {"127.0.0.1"},
		"evil.wild.test":   {"127.0.0.1"},
		"v6.wild.test":     {"::1"},
		"pub.wild.test":    {publicIP},
	}
	cases := []struct {
		name             string
		allowed, blocked []string
		host             string
		wantStatus       int
		wantReason       guard.Reason
		wantDialed       string // host part of the one address dialed; "" = none
	}{
		{name: "explicitly allowed private name", allowed: []string{"allowed.test"}, host: "allowed.test",
			wantStatus: 200, wantDialed: "127.0.0.1"},
		{name: "blocked wins over allowed", allowed: []string{"allowed.test", "*.allowed.test"},
			blocked: []string{"ads.allowed.test"}, host: "ads.allowed.test", wantStatus: 403, wantReason: guard.ReasonBlocked},
		{name: "not allowed", allowed: []string{"allowed.test"}, host: "other.test",
			wantStatus: 403, wantReason: guard.ReasonNotAllowed},
		{name: "wildcard name resolving to loopback", allowed: []string{"*.wild.test"}, host: "evil.wild.test",
			wantStatus: 403, wantReason: guard.ReasonPrivate},
		{name: "wildcard name resolving to ::1", allowed: []string{"*.wild.test"}, host: "v6.wild.test",
			wantStatus: 403, wantReason: guard.ReasonPrivate},
		{name: "wildcard name resolving to a public address", allowed: []string{"*.wild.test"}, host: "pub.wild.test",
			wantStatus: 200, wantDialed: publicIP},
		{name: "loopback literal under *", allowed: []string{"*"}, host: "127.0.0.1",
			wantStatus: 403, wantReason: guard.ReasonPrivate},
		{name: "localhost under an empty allow list", host: "localhost",
			wantStatus: 403, wantReason: guard.ReasonPrivate},
		{name: "explicitly allowed loopback literal", allowed: []string{"127.0.0.1"}, host: "127.0.0.1",
			wantStatus: 200, wantDialed: "127.0.0.1"},
		{name: "unresolvable name", allowed: []string{"*.wild.test"}, host: "nx.wild.test", wantStatus: 502},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := newOrigin(t, okHandler())
			b := setup(t, tc.allowed, tc.blocked, answers)
			res, err := b.client.Get(o.at(tc.host, "/page"))
			require.NoError(t, err)
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			require.Equal(t, tc.wantStatus, res.StatusCode, string(body))

			blocks := b.proxy.Log().Blocks()
			if tc.wantReason == "" {
				require.Empty(t, blocks)
			} else {
				require.Equal(t, int64(0), o.hits.Load(), "the refused request reached the site")
				require.Len(t, blocks, 1)
				require.Equal(t, tc.wantReason, blocks[0].Reason)
				require.Equal(t, netguard.KindSubresource, blocks[0].Kind)
				require.Equal(t, o.at(tc.host, "/page"), blocks[0].URL)
				require.Equal(t, string(tc.wantReason), res.Header.Get("X-Wayfinder-Blocked"))
				require.Contains(t, string(body), string(tc.wantReason)[:6])
			}
			if tc.wantDialed == "" {
				require.Empty(t, b.dialer.dialed())
			} else {
				require.Equal(t, []string{net.JoinHostPort(tc.wantDialed, o.port)}, b.dialer.dialed())
				require.Contains(t, string(body), "hello from "+net.JoinHostPort(tc.host, o.port))
			}
			// Never a second lookup for the same request.
			require.LessOrEqual(t, b.resolver.lookups(tc.host), 1)
		})
	}
}

func TestProxyForwardsRequestsUnchanged(t *testing.T) {
	t.Parallel()
	got := make(chan *http.Request, 1)
	bodies := make(chan string, 1)
	o := newOrigin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- string(body)
		w.Header().Set("Set-Cookie", "a=b")
		w.WriteHeader(http.StatusCreated)
	}))
	b := setup(t, []string{"site.test"}, nil, map[string][]string{"site.test": {"127.0.0.1"}})
	req, err := http.NewRequest(http.MethodPost, o.at("site.test", "/form?q=1"), strings.NewReader("a=1&b=2"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", "10.1.2.3")
	req.Header.Set("Cookie", "sid=1")
	req.Header.Set("Proxy-Connection", "keep-alive")
	res, err := b.client.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)
	require.Equal(t, "a=b", res.Header.Get("Set-Cookie"))

	r := <-got
	require.Equal(t, "a=1&b=2", <-bodies)
	require.Equal(t, "site.test:"+o.port, r.Host)
	require.Equal(t, "/form?q=1", r.RequestURI)
	require.Equal(t, "sid=1", r.Header.Get("Cookie"))
	require.Equal(t, []string{"10.1.2.3"}, r.Header.Values("X-Forwarded-For"), "the proxy added itself")
	require.Empty(t, r.Header.Get("X-Forwarded-Host"))
	require.Empty(t, r.Header.Get("Via"))
	require.Empty(t, r.Header.Get("Proxy-Connection"))
}

// TestProxyDialsWhatItChecked: the name answers a public address first and
// loopback afterwards (DNS rebinding). The proxy connects to the address the
// policy approved, without asking again, and (DNS cache off) refuses the
// next request.
func TestProxyDialsWhatItChecked(t *testing.T) {
	t.Parallel()
	for _, scheme := range []string{"http", "connect"} {
		t.Run(scheme, func(t *testing.T) {
			t.Parallel()
			b := setup(t, []string{"*.test"}, nil, map[string][]string{"rebind.test": {publicIP, "127.0.0.1"}}, noDNSCache)
			o := newOrigin(t, okHandler()) // a CONNECT only needs its port
			get := func() (int, error) {
				if scheme == "http" {
					res, err := b.client.Get(o.at("rebind.test", "/"))
					if err != nil {
						return 0, err
					}
					_ = res.Body.Close()
					return res.StatusCode, nil
				}
				return connect(t, b.proxy, "rebind.test:"+o.port)
			}

			status, err := get()
			require.NoError(t, err)
			require.Equal(t, 200, status)
			require.Equal(t, []string{net.JoinHostPort(publicIP, o.port)}, b.dialer.dialed())
			require.Equal(t, 1, b.resolver.lookups("rebind.test"), "the proxy resolved the name twice")

			status, err = get()
			require.NoError(t, err)
			require.Equal(t, 403, status)
			require.Len(t, b.dialer.dialed(), 1, "the proxy dialed after a refusal")
			blocks := b.proxy.Log().Blocks()
			require.Len(t, blocks, 1)
			require.Equal(t, guard.ReasonPrivate, blocks[0].Reason)
			require.Contains(t, blocks[0].Message, "127.0.0.1")
		})
	}
}

// TestProxyDNSCachePinsAnswers: with the cache on, a rebinding name keeps
// the answer the policy approved first, for checks and connections alike.
func TestProxyDNSCachePinsAnswers(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, okHandler())
	b := setup(t, []string{"*.test"}, nil, map[string][]string{"rebind.test": {publicIP, "127.0.0.1"}})
	for range 3 {
		res, err := b.client.Get(o.at("rebind.test", "/"))
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	require.Equal(t, 1, b.resolver.lookups("rebind.test"))
	for _, a := range b.dialer.dialed() {
		require.Equal(t, net.JoinHostPort(publicIP, o.port), a)
	}
}

// connect sends a CONNECT for hostport through p and returns its status.
func connect(t *testing.T, p *netguard.Proxy, hostport string) (int, error) {
	t.Helper()
	c, br := dialProxy(t, p)
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return 0, err
	}
	return res.StatusCode, nil
}

// dialProxy opens a raw connection to p, closed when t ends.
func dialProxy(t *testing.T, p *netguard.Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, err := url.Parse(p.URL())
	require.NoError(t, err)
	c, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
	return c, bufio.NewReader(c)
}

func TestProxyHTTPSTunnel(t *testing.T) {
	t.Parallel()
	var hits sync.Map
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.Host, true)
		_, _ = io.WriteString(w, "secure "+r.Host)
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	b := setup(t, []string{"secure.test", "blocked.test"}, []string{"blocked.test"},
		map[string][]string{"secure.test": {"127.0.0.1"}, "blocked.test": {"127.0.0.1"}})
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	tr := b.client.Transport.(*http.Transport)
	// httptest's certificate names example.com.
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, ServerName: "example.com"}

	res, err := b.client.Get("https://secure.test:" + port + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.Equal(t, "secure secure.test:"+port, string(body))

	_, err = b.client.Get("https://blocked.test:" + port + "/")
	require.Error(t, err)
	require.Contains(t, err.Error(), "Forbidden")
	_, reached := hits.Load("blocked.test:" + port)
	require.False(t, reached)
	blocks := b.proxy.Log().Blocks()
	require.Len(t, blocks, 1)
	require.Equal(t, netguard.KindConnect, blocks[0].Kind)
	require.Equal(t, "blocked.test:"+port, blocks[0].URL)
	require.Equal(t, guard.ReasonBlocked, blocks[0].Reason)
	require.Equal(t, []string{"127.0.0.1:" + port}, b.dialer.dialed())
}

// upgradeOrigin accepts any Upgrade request and then echoes lines.
func upgradeOrigin(t *testing.T) *origin {
	return newOrigin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			http.Error(w, "want upgrade", http.StatusBadRequest)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	}))
}

// upgrade sends a websocket-style upgrade for rawURL through p and returns
// the response and the connection.
func upgrade(t *testing.T, p *netguard.Proxy, rawURL string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := dialProxy(t, p)
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	_, err = fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", rawURL, u.Host)
	require.NoError(t, err)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	require.NoError(t, err)
	return res, c, br
}

func TestProxyWebSocketUpgrade(t *testing.T) {
	t.Parallel()
	o := upgradeOrigin(t)
	b := setup(t, []string{"ws.test"}, nil, map[string][]string{"ws.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}})

	res, c, br := upgrade(t, b.proxy, o.at("ws.test", "/ws"))
	require.Equal(t, http.StatusSwitchingProtocols, res.StatusCode)
	_, err := io.WriteString(c, "ping\n")
	require.NoError(t, err)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ping\n", line)

	res, _, _ = upgrade(t, b.proxy, o.at("other.test", "/ws"))
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, int64(1), o.hits.Load())
	blocks := b.proxy.Log().Blocks()
	require.Len(t, blocks, 1)
	require.Equal(t, netguard.KindWebSocket, blocks[0].Kind)
	require.Equal(t, guard.ReasonNotAllowed, blocks[0].Reason)
}

func TestProxyRequestKinds(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, okHandler())
	b := setup(t, []string{"ok.test"}, nil, nil)
	cases := []struct {
		header map[string]string
		want   netguard.Kind
	}{
		{map[string]string{"Sec-Fetch-Mode": "navigate", "Accept": "text/html"}, netguard.KindNavigation},
		{map[string]string{"Sec-Fetch-Mode": "cors", "Accept": "text/html"}, netguard.KindSubresource},
		{map[string]string{"Accept": "text/html,application/xhtml+xml"}, netguard.KindNavigation},
		{map[string]string{"Accept": "image/avif,image/webp"}, netguard.KindSubresource},
	}
	for i, tc := range cases {
		req, err := http.NewRequest(http.MethodGet, o.at("no.test", fmt.Sprintf("/%d", i)), nil)
		require.NoError(t, err)
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		res, err := b.client.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		blocks, _ := b.proxy.Log().Since(uint64(i))
		require.Len(t, blocks, 1)
		require.Equal(t, tc.want, blocks[0].Kind, "case %d", i)
	}
}

func TestProxyRefusesMalformedRequests(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, okHandler())
	pol, err := guard.New(nil, nil, true) // private allowed: only the proxy's own rules refuse
	require.NoError(t, err)
	p, err := netguard.Start(netguard.Config{Policy: pol})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })

	// Not a proxy request.
	res, err := http.Get(p.URL() + "/")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)

	// A non-canonical IPv4 spelling Chromium never sends.
	c, br := dialProxy(t, p)
	_, err = fmt.Fprintf(c, "GET http://0x7f.1:%s/ HTTP/1.1\r\nHost: 0x7f.1:%s\r\n\r\n", o.port, o.port)
	require.NoError(t, err)
	res, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, string(guard.ReasonInvalid), res.Header.Get("X-Wayfinder-Blocked"))

	// A CONNECT without a port.
	status, err := connect(t, p, "example.com")
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, int64(0), o.hits.Load())
}

// echoListener accepts TCP connections and echoes them; it reports each
// connection's end on ended.
func echoListener(t *testing.T) (port string, ended <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	ch := make(chan struct{}, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
				ch <- struct{}{}
			}()
		}
	}()
	_, port, err = net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return port, ch
}

// openTunnel CONNECTs to 127.0.0.1:port through p and checks it echoes.
func openTunnel(t *testing.T, p *netguard.Proxy, port string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br := dialProxy(t, p)
	_, err := fmt.Fprintf(c, "CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n", port, port)
	require.NoError(t, err)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	_, err = io.WriteString(c, "echo\n")
	require.NoError(t, err)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "echo\n", line)
	return c, br
}

func TestProxyClientDisconnectsMidTunnel(t *testing.T) {
	t.Parallel()
	port, ended := echoListener(t)
	b := setup(t, []string{"127.0.0.1"}, nil, nil)
	c, _ := openTunnel(t, b.proxy, port)
	_, err := io.WriteString(c, "half a messa")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	select {
	case <-ended: // the proxy closed the upstream side too
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream connection outlived its client")
	}
	// The proxy still serves.
	openTunnel(t, b.proxy, port)
}

func TestProxyCloseEndsEverything(t *testing.T) {
	t.Parallel()
	port, _ := echoListener(t)
	o := upgradeOrigin(t)
	pol, err := guard.New([]string{"127.0.0.1"}, nil, false)
	require.NoError(t, err)
	p, err := netguard.Start(netguard.Config{Policy: pol})
	require.NoError(t, err)

	var readers []*bufio.Reader
	for range 5 {
		_, br := openTunnel(t, p, port)
		readers = append(readers, br)
	}
	res, _, br := upgrade(t, p, o.URL+"/ws")
	require.Equal(t, http.StatusSwitchingProtocols, res.StatusCode)
	readers = append(readers, br)

	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close twice")
	for _, br := range readers {
		_, err := br.ReadString('\n')
		require.ErrorIs(t, err, io.EOF, "a tunnel survived Close")
	}
	_, err = http.Get(p.URL() + "/")
	require.Error(t, err, "the proxy still accepts connections")
}

func TestProxyConcurrentRequests(t *testing.T) {
	t.Parallel()
	o := newOrigin(t, okHandler())
	b := setup(t, []string{"ok.test", "no.test"}, []string{"no.test"},
		map[string][]string{"ok.test": {"127.0.0.1"}, "no.test": {"127.0.0.1"}})
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			host := "ok.test"
			want := http.StatusOK
			if i%2 == 1 {
				host, want = "no.test", http.StatusForbidden
			}
			res, err := b.client.Get(o.at(host, fmt.Sprintf("/%d", i)))
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			if res.StatusCode != want {
				errs <- fmt.Errorf("%s: status %d, want %d", host, res.StatusCode, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(n/2), o.hits.Load())
	require.Equal(t, uint64(n/2), b.proxy.Log().Total())
}

func TestLogKeepsTheLatestAndCountsAll(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	l := netguard.NewLog(3, netguard.NewMetrics(reg))
	for i := range 5 {
		reason := guard.ReasonBlocked
		if i == 4 {
			reason = guard.ReasonPrivate
		}
		b := l.Record(netguard.Block{Kind: netguard.KindConnect, URL: fmt.Sprintf("h%d:443", i), Reason: reason})
		require.Equal(t, uint64(i), b.Seq)
		require.False(t, b.Time.IsZero())
	}
	require.Equal(t, uint64(5), l.Total())
	var urls []string
	for _, b := range l.Blocks() {
		urls = append(urls, b.URL)
	}
	require.Equal(t, []string{"h2:443", "h3:443", "h4:443"}, urls)

	blocks, next := l.Since(0)
	require.Len(t, blocks, 3, "dropped blocks are skipped")
	require.Equal(t, uint64(5), next)
	blocks, next = l.Since(4)
	require.Len(t, blocks, 1)
	require.Equal(t, "h4:443", blocks[0].URL)
	require.Equal(t, uint64(5), next)
	blocks, _ = l.Since(5)
	require.Empty(t, blocks)

	require.Equal(t, 4.0, blockedCount(t, reg, "domain_blocked", "connect"))
	require.Equal(t, 1.0, blockedCount(t, reg, "private_network_blocked", "connect"))
}

// blockedCount reads wayfinder_network_blocked_total{reason,kind} from reg.
func blockedCount(t *testing.T, reg *prometheus.Registry, reason, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "wayfinder_network_blocked_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["reason"] == reason && labels["kind"] == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
