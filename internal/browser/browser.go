// Package browser drives one isolated browser context: it opens pages with
// the run's emulation settings, navigates with deadlines and takes
// screenshots. It knows nothing of runs, queues or storage.
package browser

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// Errors callers branch on.
var (
	// ErrNavigationTimeout: the page did not finish loading in time.
	ErrNavigationTimeout = errors.New("navigation timed out")
	// ErrNavigation: the browser could not load the URL (DNS, refused, TLS).
	ErrNavigation = errors.New("navigation failed")
	// ErrBrowserGone: the browser process crashed or disconnected.
	ErrBrowserGone = errors.New("browser crashed or disconnected")
)

// Session is an isolated (incognito) browser context: cookies, storage and
// cache are its own.
type Session struct {
	b    *rod.Browser
	tabs *tabTracker
	// network is the session's network guard, closed with the session so
	// that a forgotten Network.Close cannot keep pausing new pages.
	network atomic.Pointer[Network]
}

// SessionOptions configure a new browser context.
type SessionOptions struct {
	// ProxyServer routes every request of the context through this proxy
	// ("http://127.0.0.1:PORT"); the network guard uses it. Default: none.
	ProxyServer string
	// ProxyBypassList is Chromium's bypass list for ProxyServer. Default
	// "<-loopback>": loopback addresses go through the proxy too.
	ProxyBypassList string
}

// NewSession creates an incognito context in browser b.
func NewSession(ctx context.Context, b *rod.Browser, opts SessionOptions) (*Session, error) {
	req := proto.TargetCreateBrowserContext{DisposeOnDetach: true}
	if opts.ProxyServer != "" {
		req.ProxyServer = opts.ProxyServer
		req.ProxyBypassList = opts.ProxyBypassList
		if req.ProxyBypassList == "" {
			req.ProxyBypassList = "<-loopback>"
		}
	}
	res, err := req.Call(b.Context(ctx))
	if err != nil {
		return nil, classify(fmt.Errorf("create incognito context: %w", err))
	}
	inc := *b
	inc.BrowserContextID = res.BrowserContextID
	tabs, err := newTabTracker(ctx, &inc)
	if err != nil {
		_ = inc.Context(ctx).Close()
		return nil, err
	}
	return &Session{b: &inc, tabs: tabs}, nil
}

// Close disposes of the context and every page in it.
func (s *Session) Close(ctx context.Context) error {
	defer s.tabs.stop()
	if n := s.network.Load(); n != nil {
		_ = n.Close()
	}
	return s.b.Context(ctx).Close()
}

// PageOptions are the emulation settings of a page.
type PageOptions struct {
	// Width and Height of the viewport in CSS pixels. Default 1280x800.
	Width, Height int
	// UserAgent overrides the browser's when set.
	UserAgent string
	// Locale (BCP 47) overrides the browser's when set.
	Locale string
	// Timezone (IANA) overrides the server's when set.
	Timezone string
}

// Page is one tab of a Session.
type Page struct {
	p    *rod.Page
	refs refTable
	tab  *pageTab
}

// NewPage opens a blank page with the given emulation settings.
func (s *Session) NewPage(ctx context.Context, opts PageOptions) (*Page, error) {
	type opened struct {
		pg  *Page
		err error
	}
	done := make(chan opened, 1)
	go func() {
		pg, err := s.newPage(ctx, opts)
		done <- opened{pg, err}
	}()
	t := time.NewTimer(newPageTimeout)
	defer t.Stop()
	select {
	case o := <-done:
		return o.pg, o.err
	case <-t.C:
		// A browser whose new page's renderer died never answers the
		// page's setup calls, whatever their context (and rod holds a
		// browser-wide lock meanwhile): for the caller it is gone, to be
		// replaced. The call ends when the browser is closed.
		return nil, fmt.Errorf("%w: no page opened within %s", ErrBrowserGone, newPageTimeout)
	}
}

// newPageTimeout bounds opening a page (NewPage).
const newPageTimeout = 30 * time.Second

func (s *Session) newPage(ctx context.Context, opts PageOptions) (*Page, error) {
	p, err := s.b.Context(ctx).Page(proto.TargetCreateTarget{URL: "about:blank"})
	if err != nil {
		return nil, classify(fmt.Errorf("open page: %w", err))
	}
	if err := emulate(ctx, s.b, p.Context(ctx), opts); err != nil {
		return nil, err
	}
	pg := &Page{p: p}
	if err := s.tabs.adopt(ctx, pg, opts); err != nil {
		return nil, err
	}
	return pg, nil
}

// Navigate opens url and waits for its load event, at most timeout.
// It returns an error wrapping ErrNavigationTimeout, ErrNavigation or
// ErrBrowserGone, or ctx's error when ctx ends first.
func (pg *Page) Navigate(ctx context.Context, url string, timeout time.Duration) error {
	navCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := pg.p.Context(navCtx)
	err := p.Navigate(url)
	if err == nil {
		err = p.WaitLoad()
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("navigate to %s: %w", url, context.Cause(ctx))
	case navCtx.Err() != nil:
		return fmt.Errorf("%w after %s: %s", ErrNavigationTimeout, timeout, url)
	}
	var navErr *rod.NavigationError
	if errors.As(err, &navErr) {
		return fmt.Errorf("%w: %s: %s", ErrNavigation, url, navErr.Reason)
	}
	return classify(fmt.Errorf("navigate to %s: %w", url, err))
}

// Screenshot captures the viewport as PNG.
func (pg *Page) Screenshot(ctx context.Context) ([]byte, error) {
	b, err := pg.p.Context(ctx).Screenshot(false, &proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng})
	if err != nil {
		return nil, classify(fmt.Errorf("screenshot: %w", err))
	}
	return b, nil
}

// Location returns the page's current URL and title.
func (pg *Page) Location(ctx context.Context) (url, title string, err error) {
	// Asked on the page's own session: rod's Page.Info goes through the
	// browser value the page was opened with, whose context may be over.
	res, err := proto.TargetGetTargetInfo{TargetID: pg.p.TargetID}.Call(pg.p.Context(ctx))
	if err != nil {
		return "", "", classify(fmt.Errorf("page info: %w", err))
	}
	return res.TargetInfo.URL, res.TargetInfo.Title, nil
}

// classify marks errors that mean the browser itself is gone.
func classify(err error) error {
	msg := err.Error()
	for _, s := range []string{"websocket: close", "use of closed network connection", "EOF", "connection reset", "Target closed", "session closed"} {
		if strings.Contains(msg, s) {
			return fmt.Errorf("%w: %w", ErrBrowserGone, err)
		}
	}
	return err
}
