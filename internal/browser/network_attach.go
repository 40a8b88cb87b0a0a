package browser

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"golang.org/x/net/idna"

	"github.com/wayfinder/wayfinder/internal/guard"
)

// cdpCallTimeout bounds each CDP call the attacher makes.
const cdpCallTimeout = 5 * time.Second

// ownedTarget is a target of the attacher's context.
type ownedTarget struct {
	id proto.TargetTargetID
	// page is true for a page (a tab or popup), whose main frame's id is
	// its target id.
	page bool
}

// cdpSession sends CDP commands to one flat session of a browser connection.
type cdpSession struct {
	b   *rod.Browser
	id  proto.TargetSessionID
	ctx context.Context
}

// Call implements proto.Client.
func (c *cdpSession) Call(ctx context.Context, sessionID, method string, params any) ([]byte, error) {
	return c.b.Call(ctx, sessionID, method, params)
}

// GetSessionID implements proto.Sessionable.
func (c *cdpSession) GetSessionID() proto.TargetSessionID { return c.id }

// GetContext implements proto.Contextable.
func (c *cdpSession) GetContext() context.Context { return c.ctx }

// attacher puts the network rules on every page of one browser context.
//
// It holds a browser-target session of its own on the shared connection and
// asks Chromium to auto-attach that session to every new page, paused until
// released. Chromium has no per-context auto-attach, so pages of other
// contexts are attached too and released at once; a page of this context
// (including a popup, whose first request would otherwise race the rules)
// gets Fetch interception and the same auto-attach for its iframes and
// workers before it may run.
type attacher struct {
	n        *Network
	b        *rod.Browser // bound to ctx
	ctxID    proto.BrowserBrowserContextID
	root     proto.TargetSessionID
	patterns []*proto.FetchRequestPattern
	ctx      context.Context
	cancel   context.CancelFunc
	loop     chan struct{} // closed when the event loop ends
	handlers sync.WaitGroup

	mu       sync.Mutex
	owned    map[proto.TargetSessionID]ownedTarget // sessions of this context's targets
	stopped  bool
	stopErr  error
	stopOnce sync.Once
}

func startAttacher(ctx context.Context, b *rod.Browser, n *Network) (*attacher, error) {
	actx, cancel := context.WithCancel(b.GetContext())
	a := &attacher{
		n:        n,
		b:        b.Context(actx),
		ctxID:    b.BrowserContextID,
		patterns: fetchPatterns(n.rules),
		ctx:      actx,
		cancel:   cancel,
		loop:     make(chan struct{}),
		owned:    map[proto.TargetSessionID]ownedTarget{},
	}
	events := a.b.Event() // subscribed before anything is attached
	res, err := proto.TargetAttachToBrowserTarget{}.Call(b.Context(ctx))
	if err != nil {
		cancel()
		return nil, classify(fmt.Errorf("network rules: attach to browser: %w", err))
	}
	a.root = res.SessionID
	go a.run(events)
	err = proto.TargetSetAutoAttach{
		AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true,
		Filter: proto.TargetTargetFilter{{Type: "page"}, {Exclude: true}},
	}.Call(a.session(ctx, a.root))
	if err != nil {
		_ = a.stop()
		return nil, classify(fmt.Errorf("network rules: auto-attach: %w", err))
	}
	return a, nil
}

// session addresses id with ctx.
func (a *attacher) session(ctx context.Context, id proto.TargetSessionID) *cdpSession {
	return &cdpSession{b: a.b, id: id, ctx: ctx}
}

// stop detaches the browser-target session, which ends the auto-attach and
// every session it created (Chromium resumes what they had paused), then
// waits for the attacher's goroutines.
func (a *attacher) stop() error {
	a.stopOnce.Do(func() {
		a.mu.Lock()
		a.stopped = true
		a.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), cdpCallTimeout)
		err := proto.TargetDetachFromTarget{SessionID: a.root}.Call(a.b.Context(ctx))
		cancel()
		if err != nil && a.ctx.Err() == nil {
			a.stopErr = classify(fmt.Errorf("network rules: detach: %w", err))
		}
		a.cancel()
		<-a.loop
		a.handlers.Wait()
	})
	return a.stopErr
}

// spawn runs f in a tracked goroutine unless the attacher is stopping.
func (a *attacher) spawn(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return
	}
	a.handlers.Add(1)
	go func() {
		defer a.handlers.Done()
		f()
	}()
}

func (a *attacher) isOwned(id proto.TargetSessionID) bool {
	_, ok := a.target(id)
	return ok
}

// target returns the target of an owned session.
func (a *attacher) target(id proto.TargetSessionID) (ownedTarget, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.owned[id]
	return t, ok
}

func (a *attacher) own(id proto.TargetSessionID, info *proto.TargetTargetInfo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.owned[id] = ownedTarget{id: info.TargetID, page: info.Type == proto.TargetTargetInfoTypePage}
}

func (a *attacher) disown(id proto.TargetSessionID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.owned, id)
}

// run routes the connection's events until the attacher stops.
func (a *attacher) run(events <-chan *rod.Message) {
	defer close(a.loop)
	for msg := range events {
		switch msg.Method {
		case "Target.attachedToTarget":
			parent := msg.SessionID
			if parent != a.root && !a.isOwned(parent) {
				continue
			}
			var e proto.TargetAttachedToTarget
			if !msg.Load(&e) || e.TargetInfo == nil {
				continue
			}
			if parent == a.root && e.TargetInfo.BrowserContextID != a.ctxID {
				a.spawn(func() { a.release(parent, e.SessionID, e.WaitingForDebugger) })
				continue
			}
			// Owned before Fetch is enabled, so no paused request of it
			// arrives unrecognised.
			a.own(e.SessionID, e.TargetInfo)
			a.spawn(func() { a.setup(e) })
		case "Target.detachedFromTarget":
			var e proto.TargetDetachedFromTarget
			if msg.Load(&e) {
				a.disown(e.SessionID)
			}
		case "Fetch.requestPaused":
			if !a.isOwned(msg.SessionID) {
				continue
			}
			var e proto.FetchRequestPaused
			if msg.Load(&e) && e.Request != nil {
				id := msg.SessionID
				a.spawn(func() { a.paused(id, &e) })
			}
		}
	}
}

// release lets a page of another context run and forgets it.
func (a *attacher) release(parent, child proto.TargetSessionID, waiting bool) {
	ctx, cancel := context.WithTimeout(a.ctx, cdpCallTimeout)
	defer cancel()
	if waiting {
		_ = proto.RuntimeRunIfWaitingForDebugger{}.Call(a.session(ctx, child))
	}
	_ = proto.TargetDetachFromTarget{SessionID: child}.Call(a.session(ctx, parent))
}

// setup puts the rules on a target of this context, then lets it run.
func (a *attacher) setup(e proto.TargetAttachedToTarget) {
	ctx, cancel := context.WithTimeout(a.ctx, cdpCallTimeout)
	defer cancel()
	s := a.session(ctx, e.SessionID)
	if e.WaitingForDebugger {
		// Whatever happens below, the target must not stay paused.
		defer func() { _ = proto.RuntimeRunIfWaitingForDebugger{}.Call(s) }()
	}
	// Targets without the Fetch domain (some workers) refuse it; they have
	// nothing to intercept.
	_ = proto.FetchEnable{Patterns: a.patterns}.Call(s)
	switch e.TargetInfo.Type {
	case proto.TargetTargetInfoTypePage, "iframe":
		_ = proto.TargetSetAutoAttach{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true}.Call(s)
	}
}

// paused decides a request Fetch paused: refuse a non-http(s) URL, add the
// header rules' headers to a matching one, let anything else go on as is. A
// response paused for its status is reported and let go on.
func (a *attacher) paused(id proto.TargetSessionID, e *proto.FetchRequestPaused) {
	if e.ResponseStatusCode != nil || e.ResponseErrorReason != "" {
		a.document(id, e)
		return
	}
	raw := e.Request.URL + e.Request.URLFragment
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		ctx, cancel := context.WithTimeout(a.ctx, cdpCallTimeout)
		defer cancel()
		err := a.n.schemes.Check(ctx, raw)
		var be *guard.BlockedError
		if errors.As(err, &be) {
			_ = proto.FetchFailRequest{RequestID: e.RequestID, ErrorReason: proto.NetworkErrorReasonBlockedByClient}.Call(a.session(ctx, id))
			if a.n.onBlock != nil {
				a.n.onBlock(BlockedRequest{URL: raw, Err: be, Navigation: e.ResourceType == proto.NetworkResourceTypeDocument})
			}
			return
		}
	}
	hctx, hcancel := context.WithTimeout(a.ctx, HeaderFuncTimeout)
	headers := a.n.headersFor(hctx, e.Request.URL, e.Request.Headers)
	hcancel()
	ctx, cancel := context.WithTimeout(a.ctx, cdpCallTimeout)
	defer cancel()
	_ = proto.FetchContinueRequest{RequestID: e.RequestID, Headers: headers}.Call(a.session(ctx, id))
}

// document reports a document response paused at the response stage (the
// top-level ones of pages, from watched hosts), then lets it go on.
func (a *attacher) document(id proto.TargetSessionID, e *proto.FetchRequestPaused) {
	ctx, cancel := context.WithTimeout(a.ctx, cdpCallTimeout)
	defer cancel()
	t, owned := a.target(id)
	if owned && t.page && string(e.FrameID) == string(t.id) && e.ResponseStatusCode != nil &&
		a.n.onDocument != nil && a.n.rules.documents != nil {
		if u, err := url.Parse(e.Request.URL); err == nil && a.n.rules.documents.MatchesHost(u.Hostname()) {
			a.n.onDocument(DocumentResponse{TargetID: string(t.id), URL: e.Request.URL, Status: *e.ResponseStatusCode})
		}
	}
	_ = proto.FetchContinueRequest{RequestID: e.RequestID}.Call(a.session(ctx, id))
}

// fetchPatterns are the URL patterns Fetch pauses: file: URLs and the hosts
// of the header rules at the request stage, documents of the watched hosts
// at the response stage. Patterns are globs, so "*://*.example.com/*" also
// matches other URLs that happen to contain the text; each paused request
// is matched exactly before any header is added or status reported.
func fetchPatterns(rules compiledRules) []*proto.FetchRequestPattern {
	globs := []string{"file:*"}
	seen := map[string]bool{}
	for _, r := range rules.headers {
		for _, d := range r.domains.Allowed {
			for _, g := range hostGlobs(d) {
				if !seen[g] {
					seen[g] = true
					globs = append(globs, g)
				}
			}
		}
	}
	out := make([]*proto.FetchRequestPattern, 0, len(globs))
	for _, g := range globs {
		out = append(out, &proto.FetchRequestPattern{URLPattern: g, RequestStage: proto.FetchRequestStageRequest})
	}
	if rules.documents != nil {
		seen := map[string]bool{}
		for _, d := range rules.documents.Allowed {
			for _, g := range hostGlobs(d) {
				if !seen[g] {
					seen[g] = true
					out = append(out, &proto.FetchRequestPattern{URLPattern: g,
						ResourceType: proto.NetworkResourceTypeDocument, RequestStage: proto.FetchRequestStageResponse})
				}
			}
		}
	}
	return out
}

// hostGlobs turns a validated domain pattern into URL globs for its host
// with and without a port, in the form Chromium writes URLs (lower case,
// punycode, canonical IPv6). A pattern it cannot write that way pauses
// every request.
func hostGlobs(pattern string) []string {
	p := strings.ToLower(strings.TrimSuffix(pattern, "."))
	if p == "*" {
		return []string{"*"}
	}
	wild := strings.HasPrefix(p, "*.")
	p = strings.TrimPrefix(p, "*.")
	host := p
	if a, err := netip.ParseAddr(strings.Trim(p, "[]")); err == nil {
		host = a.Unmap().String()
		if a.Unmap().Is6() {
			host = "[" + host + "]"
		}
	} else if ascii, err := idna.Lookup.ToASCII(p); err == nil {
		host = ascii
	} else {
		return []string{"*"}
	}
	if wild {
		host = "*." + host
	}
	return []string{"*://" + host + "/*", "*://" + host + ":*/*"}
}
