package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/wayfinder/wayfinder/internal/guard"
)

// Defaults of [Config].
const (
	DefaultListenAddr  = "127.0.0.1:0"
	DefaultDialTimeout = 10 * time.Second
	DefaultDNSCacheTTL = 30 * time.Second
)

// Config configures a [Proxy].
type Config struct {
	// Policy decides which requests pass. Required.
	Policy *guard.Policy
	// Log records refused requests. Default: a new log of DefaultMaxBlocks
	// blocks without metrics.
	Log *Log
	// Resolver resolves host names, once per request: the policy checks the
	// answer and the proxy dials it. It replaces any resolver set on Policy.
	// Default net.DefaultResolver.
	Resolver guard.Resolver
	// Dial connects to an address ("ip:port") the policy approved. Default:
	// a net.Dialer.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// DialTimeout bounds each connection attempt. Default DefaultDialTimeout.
	DialTimeout time.Duration
	// DNSCacheTTL is how long a host's addresses are reused for later
	// requests (checked and dialed alike). Default DefaultDNSCacheTTL;
	// negative: resolve for every request.
	DNSCacheTTL time.Duration
	// ListenAddr is where the proxy listens. Default DefaultListenAddr
	// (loopback, a free port).
	ListenAddr string
	// Logger receives debug lines for refusals and upstream errors. Default:
	// discard.
	Logger *slog.Logger
}

// Proxy is one run's forward HTTP proxy. Start it with [Start], point the
// run's browser context at [Proxy.URL], and Close it when the run ends.
type Proxy struct {
	policy      *guard.Policy
	log         *Log
	resolver    guard.Resolver
	dialFunc    func(ctx context.Context, network, address string) (net.Conn, error)
	dialTimeout time.Duration
	logger      *slog.Logger

	ln        net.Listener
	srv       *http.Server
	transport *http.Transport
	forward   *httputil.ReverseProxy
	ctx       context.Context // ends when Close starts; every request's context derives from it
	cancel    context.CancelFunc
	served    chan struct{} // closed when Serve returns
	buffers   bufferPool

	mu       sync.Mutex
	closed   bool
	handlers sync.WaitGroup
}

// Start listens and serves the proxy until Close.
func Start(cfg Config) (*Proxy, error) {
	if cfg.Policy == nil {
		return nil, errors.New("netguard: Config.Policy is required")
	}
	p := &Proxy{
		policy:      cfg.Policy,
		log:         cfg.Log,
		resolver:    cfg.Resolver,
		dialFunc:    cfg.Dial,
		dialTimeout: cfg.DialTimeout,
		logger:      cfg.Logger,
		served:      make(chan struct{}),
	}
	if p.log == nil {
		p.log = NewLog(0, nil)
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if ttl := cfg.DNSCacheTTL; ttl >= 0 {
		if ttl == 0 {
			ttl = DefaultDNSCacheTTL
		}
		p.resolver = &dnsCache{base: p.resolver, ttl: ttl, now: time.Now, entries: map[string]dnsEntry{}}
	}
	if p.dialFunc == nil {
		p.dialFunc = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext
	}
	if p.dialTimeout <= 0 {
		p.dialTimeout = DefaultDialTimeout
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	addr := cfg.ListenAddr
	if addr == "" {
		addr = DefaultListenAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("netguard: listen: %w", err)
	}
	p.ln = ln
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.transport = &http.Transport{
		// Never a proxy from the environment: the upstream is the site.
		Proxy:                 nil,
		DialContext:           p.dialContext,
		DisableCompression:    true, // pass the browser's Accept-Encoding through untouched
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       30 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Forward what the browser sent, as sent: the URL is the
			// absolute one it asked for, the Host header its own, and the
			// X-Forwarded-* headers ReverseProxy strips are the page's
			// (none are added).
			pr.Out.Host = pr.In.Host
			for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v, ok := pr.In.Header[h]; ok {
					pr.Out.Header[h] = v
				}
			}
		},
		Transport:     p.transport,
		BufferPool:    &p.buffers,
		FlushInterval: -1, // stream (event streams, long polls)
		ErrorHandler:  p.upstreamError,
		ErrorLog:      slog.NewLogLogger(p.logger.Handler(), slog.LevelDebug),
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return p.ctx },
		ErrorLog:          slog.NewLogLogger(p.logger.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return p, nil
}

// URL returns the proxy's address for Chromium's proxyServer setting,
// "http://127.0.0.1:PORT".
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Log returns the log the proxy records refusals in.
func (p *Proxy) Log() *Log { return p.log }

// Close stops the proxy: it refuses new connections, ends every open
// tunnel, websocket and in-flight request, and returns when all of the
// proxy's goroutines are done. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.served
		return nil
	}
	p.closed = true
	p.mu.Unlock()

	p.cancel()
	err := p.srv.Close()
	<-p.served
	p.handlers.Wait()
	p.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("netguard: close: %w", err)
	}
	return nil
}

// enter registers a running handler, or reports false once Close started.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.handlers.Add(1)
	return true
}

// ServeHTTP implements http.Handler: CONNECT opens a tunnel, an absolute
// URL is forwarded, anything else is not a proxy request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		http.Error(w, "wayfinder network guard: closed", http.StatusServiceUnavailable)
		return
	}
	defer p.handlers.Done()
	if r.Method == http.MethodConnect {
		p.serveConnect(w, r)
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "wayfinder network guard: not a proxy request", http.StatusBadRequest)
		return
	}
	kind := requestKind(r)
	t, err := p.resolve(r.Context(), r.URL)
	if err != nil {
		p.fail(w, r.URL.Redacted(), kind, err)
		return
	}
	p.forward.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), targetKey{}, t)))
}

// requestKind tells navigations from subresources by what Chromium says
// about the request: Sec-Fetch-Mode on trustworthy origins, the Accept
// header it sends for documents everywhere.
func requestKind(r *http.Request) Kind {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return KindWebSocket
	}
	if mode := r.Header.Get("Sec-Fetch-Mode"); mode != "" {
		if mode == "navigate" {
			return KindNavigation
		}
		return KindSubresource
	}
	if strings.HasPrefix(r.Header.Get("Accept"), "text/html") {
		return KindNavigation
	}
	return KindSubresource
}

// fail answers a request the proxy will not carry: 403 for a refusal
// (recorded), 502 for a host that does not resolve, 503 when closing.
func (p *Proxy) fail(w http.ResponseWriter, rawURL string, kind Kind, err error) {
	var be *guard.BlockedError
	switch {
	case errors.As(err, &be):
		b := p.log.Record(Block{Kind: kind, URL: rawURL, Host: be.Host, Reason: be.Reason, Message: be.Error()})
		p.logger.Debug("request blocked", "url", rawURL, "kind", kind, "reason", b.Reason)
		w.Header().Set("X-Wayfinder-Blocked", string(b.Reason))
		http.Error(w, "wayfinder network guard: "+string(be.Reason)+": "+be.Error(), http.StatusForbidden)
	case errors.Is(err, errUnresolved):
		http.Error(w, "wayfinder network guard: "+err.Error(), http.StatusBadGateway)
	default:
		http.Error(w, "wayfinder network guard: "+err.Error(), http.StatusServiceUnavailable)
	}
}

// upstreamError answers when the site could not be reached or the request
// was abandoned.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil {
		p.logger.Debug("upstream error", "url", r.URL.Redacted(), "error", err)
	}
	w.WriteHeader(http.StatusBadGateway)
}

// serveConnect checks the tunnel's destination, dials the address the
// policy approved and copies bytes both ways until either side ends or the
// proxy closes.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	hostport := r.Host
	u := &url.URL{Scheme: "https", Host: hostport}
	if _, port, err := net.SplitHostPort(hostport); err != nil || port == "" {
		p.fail(w, hostport, KindConnect, &guard.BlockedError{URL: hostport, Reason: guard.ReasonInvalid})
		return
	}
	t, err := p.resolve(r.Context(), u)
	if err != nil {
		p.fail(w, hostport, KindConnect, err)
		return
	}
	upstream, err := p.dial(r.Context(), t)
	if err != nil {
		http.Error(w, "wayfinder network guard: "+err.Error(), http.StatusBadGateway)
		return
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = upstream.Close()
		http.Error(w, "wayfinder network guard: "+err.Error(), http.StatusInternalServerError)
		return
	}
	stop := context.AfterFunc(r.Context(), func() {
		_ = client.Close()
		_ = upstream.Close()
	})
	defer func() {
		stop()
		_ = client.Close()
		_ = upstream.Close()
	}()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	// The first direction to end tears the tunnel down: browsers never
	// half-close, and a peer left waiting would hold the tunnel open.
	done := make(chan struct{}, 2)
	go func() {
		// brw.Reader first: bytes the client sent after the CONNECT line.
		p.buffers.copy(upstream, brw.Reader)
		done <- struct{}{}
	}()
	go func() {
		p.buffers.copy(client, upstream)
		done <- struct{}{}
	}()
	<-done
	_ = client.Close()
	_ = upstream.Close()
	<-done
}

// bufferPool recycles copy buffers; a request or tunnel otherwise allocates
// 32 KiB per direction. It implements httputil.BufferPool.
type bufferPool struct{ p sync.Pool }

// Get returns a 32 KiB buffer.
func (b *bufferPool) Get() []byte {
	if buf, ok := b.p.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, 32<<10)
}

// Put returns buf to the pool.
func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// copy copies src to dst until either fails.
func (b *bufferPool) copy(dst io.Writer, src io.Reader) {
	buf := b.Get()
	defer b.Put(buf)
	_, _ = io.CopyBuffer(dst, src, buf)
}
