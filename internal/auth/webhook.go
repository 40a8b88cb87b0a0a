package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// WebhookRequest is the JSON body a login webhook receives.
type WebhookRequest struct {
	RunID string `json:"run_id"`
	// Domain is the host whose first visit called the webhook; empty for
	// the global callback.
	Domain string `json:"domain"`
	// CDPURL is a WebSocket URL speaking the Chrome DevTools Protocol to
	// the run's browser context (confined to it), valid until the webhook
	// answers or ExpiresAt.
	CDPURL string `json:"cdp_url"`
	// TargetID is the run's page.
	TargetID string `json:"target_id"`
	// BrowserContextID is the run's browser context.
	BrowserContextID string `json:"browser_context_id"`
	// ExpiresAt is when the login must be done (RFC 3339).
	ExpiresAt time.Time `json:"expires_at"`
}

// callWebhook tells a login webhook where the run's page is and waits for
// its 2xx answer, at most the webhook's timeout.
func (a *Auth) callWebhook(ctx context.Context, page *browser.Page, w *Webhook, domain string) error {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ep, err := a.serveCDP(page)
	if err != nil {
		return err
	}
	defer ep.close()
	body, err := json.Marshal(WebhookRequest{RunID: a.opts.RunID, Domain: domain, CDPURL: ep.url,
		TargetID: page.TargetID(), BrowserContextID: page.ContextID(), ExpiresAt: a.opts.now().Add(timeout).UTC()})
	if err != nil {
		return fmt.Errorf("login webhook: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return errors.New("login webhook: the URL cannot be called")
	}
	for k, v := range w.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.opts.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil && context.Cause(ctx) == context.DeadlineExceeded {
			return fmt.Errorf("the login webhook did not answer within %s", timeout)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the login webhook could not be called: %s", a.scrub(err.Error()))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the login webhook answered HTTP %d", resp.StatusCode)
	}
	return nil
}

// cdpEndpoint is a login webhook's short-lived CDP endpoint: a listener of
// its own whose one path carries a random token; each WebSocket it accepts
// is a browser.ContextConn to the page's context.
type cdpEndpoint struct {
	url   string
	path  string
	page  *browser.Page
	srv   *http.Server
	ctx   context.Context
	stop  context.CancelFunc
	serve chan struct{} // closed when Serve returns
	conns sync.WaitGroup

	mu     sync.Mutex
	closed bool
}

func (a *Auth) serveCDP(page *browser.Page) (*cdpEndpoint, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(a.opts.CDPListenHost, "0"))
	if err != nil {
		return nil, fmt.Errorf("login webhook: cdp endpoint: %w", err)
	}
	var tok [32]byte
	_, _ = rand.Read(tok[:])
	ctx, stop := context.WithCancel(context.Background())
	ep := &cdpEndpoint{
		path:  "/cdp/" + base64.RawURLEncoding.EncodeToString(tok[:]),
		page:  page,
		ctx:   ctx,
		stop:  stop,
		serve: make(chan struct{}),
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ep.url = "ws://" + net.JoinHostPort(a.opts.CDPAdvertiseHost, port) + ep.path
	ep.srv = &http.Server{Handler: http.HandlerFunc(ep.handle), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		defer close(ep.serve)
		_ = ep.srv.Serve(ln)
	}()
	return ep, nil
}

func (ep *cdpEndpoint) handle(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.URL.Path), []byte(ep.path)) != 1 {
		http.NotFound(w, r)
		return
	}
	ep.mu.Lock()
	if ep.closed {
		ep.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	ep.conns.Add(1)
	ep.mu.Unlock()
	defer ep.conns.Done()
	// The token in the path is the authentication; callers are programs,
	// not pages, so there is no origin to check.
	ws, err := acceptWS(w, r)
	if err != nil {
		return
	}
	conn, err := ep.page.OpenContextConn(ep.ctx)
	if err != nil {
		ws.close()
		return
	}
	ctx, cancel := context.WithCancel(ep.ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done() // the endpoint closes, or either side failed
		ws.close()   // ends the read below
	}()
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for ev := range conn.Events() {
			if ws.writeText(ev) != nil {
				cancel()
			}
		}
	}()
	for {
		msg, err := ws.read()
		if err != nil {
			break
		}
		conn.Send(msg, func(reply []byte) {
			if ws.writeText(reply) != nil {
				cancel()
			}
		})
	}
	cancel()
	_ = conn.Close()
	<-forwarded
	<-done
}

// close stops accepting, ends every connection (detaching the caller's
// sessions) and waits for them.
func (ep *cdpEndpoint) close() {
	ep.mu.Lock()
	ep.closed = true
	ep.mu.Unlock()
	ep.stop()
	_ = ep.srv.Close()
	<-ep.serve
	ep.conns.Wait()
}
