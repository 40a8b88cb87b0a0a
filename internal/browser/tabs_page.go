package browser

import (
	"context"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// request is one network request the page has in flight.
type request struct {
	start time.Time
	kind  proto.NetworkResourceType
}

// pageTab is the live state of one page that actions rely on: requests in
// flight, loading and navigation, JS dialogs, drag and file-chooser
// events. The tracker's goroutine feeds it.
type pageTab struct {
	id      string
	tracker *tabTracker
	pg      *Page
	opts    PageOptions
	opener  proto.TargetTargetID
	target  proto.TargetTargetID
	// session is the CDP session whose events describe the page, and
	// client addresses it (dialogs are answered there).
	session proto.TargetSessionID
	client  func(context.Context) proto.Client

	mu           sync.Mutex
	changed      chan struct{}
	closed       bool
	requests     map[proto.NetworkRequestID]request
	lastActivity time.Time
	loading      bool
	navSeq       int
	dialogs      []DialogEvent
	dialogPolicy *DialogPolicy
	drag         chan *proto.InputDragData
	fileChooser  chan proto.PageFileChooserOpened
}

func newPageTab(t *tabTracker, pg *Page, opts PageOptions, opener proto.TargetTargetID,
	session proto.TargetSessionID, client func(context.Context) proto.Client) *pageTab {
	pt := &pageTab{
		tracker:  t,
		pg:       pg,
		opts:     opts,
		opener:   opener,
		session:  session,
		client:   client,
		changed:  make(chan struct{}),
		requests: map[proto.NetworkRequestID]request{},
	}
	pg.tab = pt
	if pg.p != nil {
		pt.target = pg.p.TargetID
	}
	return pt
}

func (pt *pageTab) notifyLocked() {
	close(pt.changed)
	pt.changed = make(chan struct{})
}

func (pt *pageTab) markClosed() {
	pt.mu.Lock()
	pt.closed = true
	pt.notifyLocked()
	pt.mu.Unlock()
}

// handle updates the page's state from one of its events.
func (pt *pageTab) handle(msg *rod.Message) {
	now := time.Now()
	mainFrame := proto.PageFrameID(pt.target) // a page's main frame has its target's ID
	switch msg.Method {
	case "Network.requestWillBeSent":
		var e proto.NetworkRequestWillBeSent
		if msg.Load(&e) {
			pt.update(func() {
				if _, ok := pt.requests[e.RequestID]; !ok {
					pt.requests[e.RequestID] = request{start: now, kind: e.Type}
				}
				pt.lastActivity = now
			})
		}
	case "Network.loadingFinished":
		var e proto.NetworkLoadingFinished
		if msg.Load(&e) {
			pt.finish(e.RequestID, now)
		}
	case "Network.loadingFailed":
		var e proto.NetworkLoadingFailed
		if msg.Load(&e) {
			pt.finish(e.RequestID, now)
		}
	case "Page.frameStartedLoading":
		var e proto.PageFrameStartedLoading
		if msg.Load(&e) && e.FrameID == mainFrame {
			pt.update(func() { pt.loading, pt.lastActivity = true, now; pt.navSeq++ })
		}
	case "Page.frameStoppedLoading":
		var e proto.PageFrameStoppedLoading
		if msg.Load(&e) && e.FrameID == mainFrame {
			pt.update(func() { pt.loading, pt.lastActivity = false, now })
			// The page has its title now; refresh off the event goroutine.
			pt.tracker.spawn(func() {
				ctx, cancel := context.WithTimeout(pt.tracker.ctx, 2*time.Second)
				defer cancel()
				_ = pt.tracker.refresh(ctx)
			})
		}
	case "Page.frameNavigated":
		// Counted too: a page restored from the back-forward cache does not
		// start loading.
		var e proto.PageFrameNavigated
		if msg.Load(&e) && e.Frame != nil && e.Frame.ID == mainFrame {
			pt.update(func() { pt.navSeq++; pt.lastActivity = now })
		}
	case "Page.navigatedWithinDocument":
		var e proto.PageNavigatedWithinDocument
		if msg.Load(&e) && e.FrameID == mainFrame {
			pt.update(func() { pt.navSeq++; pt.lastActivity = now })
		}
	case "Page.javascriptDialogOpening":
		var e proto.PageJavascriptDialogOpening
		if msg.Load(&e) {
			pt.answerDialog(e)
		}
	case "Page.fileChooserOpened":
		var e proto.PageFileChooserOpened
		if msg.Load(&e) {
			pt.mu.Lock()
			ch := pt.fileChooser
			pt.mu.Unlock()
			if ch != nil {
				select {
				case ch <- e:
				default:
				}
			}
		}
	case "Input.dragIntercepted":
		var e proto.InputDragIntercepted
		if msg.Load(&e) {
			pt.mu.Lock()
			ch := pt.drag
			pt.mu.Unlock()
			if ch != nil {
				select {
				case ch <- e.Data:
				default:
				}
			}
		}
	}
}

func (pt *pageTab) update(f func()) {
	pt.mu.Lock()
	f()
	pt.notifyLocked()
	pt.mu.Unlock()
}

func (pt *pageTab) finish(id proto.NetworkRequestID, now time.Time) {
	pt.update(func() {
		if _, ok := pt.requests[id]; ok {
			delete(pt.requests, id)
			pt.lastActivity = now
		}
	})
}

// netState is a consistent view of the page's network and loading state.
type netState struct {
	closed       bool
	loading      bool
	navSeq       int
	inflight     int // requests that count (see countsForSettle)
	lastActivity time.Time
	changed      <-chan struct{}
	// tabsChanged fires when a popup starts or finishes being adopted.
	tabsChanged <-chan struct{}
	adopting    int
}

// state returns the page's state, counting only requests started at or
// after since that settling should wait for.
func (pt *pageTab) state(since time.Time) netState {
	pt.mu.Lock()
	st := netState{closed: pt.closed, loading: pt.loading, navSeq: pt.navSeq, lastActivity: pt.lastActivity, changed: pt.changed}
	for _, r := range pt.requests {
		if !r.start.Before(since) && countsForSettle(r.kind) {
			st.inflight++
		}
	}
	pt.mu.Unlock()
	t := pt.tracker
	t.mu.Lock()
	st.tabsChanged, st.adopting = t.changed, t.adopting
	t.mu.Unlock()
	return st
}

// countsForSettle reports whether a request of this type should delay
// settling. Streams (event sources, media, websockets) stay open by design.
func countsForSettle(kind proto.NetworkResourceType) bool {
	switch kind {
	case proto.NetworkResourceTypeEventSource, proto.NetworkResourceTypeWebSocket,
		proto.NetworkResourceTypeMedia, proto.NetworkResourceTypePing:
		return false
	}
	return true
}

func (pt *pageTab) isClosed() bool {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.closed
}

// takeDialogs returns and forgets the dialogs not yet reported.
func (pt *pageTab) takeDialogs() []DialogEvent {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	d := pt.dialogs
	pt.dialogs = nil
	return d
}
