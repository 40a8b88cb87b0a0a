package browser

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// TabInfo describes one open tab of a Session.
type TabInfo struct {
	// ID names the tab in actions ("t1", "t2", ...), stable for its life.
	ID    string `json:"id"`
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
	// Active is the tab actions last ran on, or the newest one a page
	// opened during an action.
	Active bool `json:"active,omitempty"`
	// Opener is the ID of the tab that opened this one (a popup or a
	// target=_blank link), empty for tabs the run opened itself.
	Opener string `json:"opener,omitempty"`
}

// tabTracker follows every page of one Session: pages the run opens and
// pages its pages open (popups, target=_blank links), which it adopts so
// they get the opener's emulation and dialog handling before the model
// sees them. One goroutine reads the browser's event stream for the whole
// session and routes page events (network, loading, dialogs) to the page
// they belong to.
type tabTracker struct {
	b      *rod.Browser // the session's browser context, bound to ctx
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	opts      ActionOptions
	pages     []*Page // in the order they were opened
	byTarget  map[proto.TargetTargetID]*Page
	bySession map[proto.TargetSessionID]*Page
	info      map[proto.TargetTargetID]proto.TargetTargetInfo
	active    *Page
	front     *Page // the page last brought to the front
	nextID    int
	// adopting counts popups seen but not yet ready; adopted counts those
	// that became ready, so an action can tell which appeared during it.
	adopting int
	adopted  int
	changed  chan struct{}
}

// newTabTracker starts following the pages of the browser context b. It
// runs until stop or until the browser connection ends.
func newTabTracker(b *rod.Browser) *tabTracker {
	ctx, cancel := context.WithCancel(b.GetContext())
	t := &tabTracker{
		b:         b.Context(ctx),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		byTarget:  map[proto.TargetTargetID]*Page{},
		bySession: map[proto.TargetSessionID]*Page{},
		info:      map[proto.TargetTargetID]proto.TargetTargetInfo{},
		changed:   make(chan struct{}),
	}
	// Subscribe before returning so no popup of the first page is missed.
	events := t.b.Event()
	go t.run(events)
	return t
}

// stop ends the tracker and waits (briefly) for its goroutine.
func (t *tabTracker) stop() {
	t.cancel()
	select {
	case <-t.done:
	case <-time.After(5 * time.Second):
	}
}

// notifyLocked wakes everyone waiting for a change. t.mu must be held.
func (t *tabTracker) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// adopt makes pg one of the session's tabs: it enables the events the
// actions rely on and starts routing them to pg. opener is empty for pages
// the run opened itself.
func (t *tabTracker) adopt(ctx context.Context, pg *Page, opts PageOptions, opener proto.TargetTargetID) error {
	pg.tab = newPageTab(t, pg, opts, opener)
	t.mu.Lock()
	t.nextID++
	pg.tab.id = "t" + strconv.Itoa(t.nextID)
	t.byTarget[pg.p.TargetID] = pg
	t.bySession[pg.p.SessionID] = pg
	t.pages = append(t.pages, pg)
	if t.active == nil {
		t.active = pg
	}
	t.mu.Unlock()
	p := pg.p.Context(ctx)
	// Enabled for the page's life (and recorded by rod), so a later
	// EachEvent elsewhere never disables them when it finishes.
	if err := (proto.PageEnable{}).Call(p); err != nil {
		return classify(fmt.Errorf("enable page events: %w", err))
	}
	if err := (proto.NetworkEnable{}).Call(p); err != nil {
		return classify(fmt.Errorf("enable network events: %w", err))
	}
	return nil
}

// run routes the browser's events until the tracker stops.
func (t *tabTracker) run(events <-chan *rod.Message) {
	defer close(t.done)
	for msg := range events {
		switch msg.Method {
		case "Target.targetCreated":
			var e proto.TargetTargetCreated
			if msg.Load(&e) && t.ours(e.TargetInfo) {
				t.targetCreated(e.TargetInfo)
			}
		case "Target.targetInfoChanged":
			var e proto.TargetTargetInfoChanged
			if msg.Load(&e) && t.ours(e.TargetInfo) {
				t.mu.Lock()
				t.info[e.TargetInfo.TargetID] = *e.TargetInfo
				t.mu.Unlock()
			}
		case "Target.targetDestroyed":
			var e proto.TargetTargetDestroyed
			if msg.Load(&e) {
				t.targetGone(e.TargetID)
			}
		default:
			if msg.SessionID == "" {
				continue
			}
			t.mu.Lock()
			pg := t.bySession[msg.SessionID]
			t.mu.Unlock()
			if pg != nil {
				pg.tab.handle(msg)
			}
		}
	}
}

func (t *tabTracker) ours(info *proto.TargetTargetInfo) bool {
	return info != nil && info.Type == proto.TargetTargetInfoTypePage &&
		info.BrowserContextID == t.b.BrowserContextID
}

// targetCreated adopts a page opened by one of the session's pages. Pages
// without an opener are the run's own (NewPage adopts them).
func (t *tabTracker) targetCreated(info *proto.TargetTargetInfo) {
	t.mu.Lock()
	t.info[info.TargetID] = *info
	opener := t.byTarget[info.OpenerID]
	if info.OpenerID == "" || opener == nil {
		t.mu.Unlock()
		return
	}
	t.adopting++
	t.notifyLocked()
	t.mu.Unlock()
	go t.adoptPopup(info.TargetID, opener)
}

func (t *tabTracker) adoptPopup(id proto.TargetTargetID, opener *Page) {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	err := func() error {
		rp, err := t.b.Context(t.ctx).PageFromTarget(id)
		if err != nil {
			return err
		}
		pg := &Page{p: rp}
		if err := emulate(ctx, t.b, rp, opener.tab.opts); err != nil {
			return err
		}
		return t.adopt(ctx, pg, opener.tab.opts, opener.p.TargetID)
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.adopting--
	if err == nil {
		t.adopted++
	}
	t.notifyLocked()
}

// targetGone forgets a closed page; when it was the active one, its opener
// (or the most recent remaining page) becomes active.
func (t *tabTracker) targetGone(id proto.TargetTargetID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.info, id)
	pg := t.byTarget[id]
	if pg == nil {
		return
	}
	delete(t.byTarget, id)
	delete(t.bySession, pg.p.SessionID)
	for i, p := range t.pages {
		if p == pg {
			t.pages = append(t.pages[:i], t.pages[i+1:]...)
			break
		}
	}
	pg.tab.markClosed()
	if t.front == pg {
		t.front = nil
	}
	if t.active == pg {
		t.active = nil
		if op := t.byTarget[pg.tab.opener]; op != nil {
			t.active = op
		} else if len(t.pages) > 0 {
			t.active = t.pages[len(t.pages)-1]
		}
	}
	t.notifyLocked()
}

// tabs lists the open tabs in the order they were opened.
func (t *tabTracker) tabs() []TabInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]TabInfo, 0, len(t.pages))
	for _, pg := range t.pages {
		info := t.info[pg.p.TargetID]
		ti := TabInfo{ID: pg.tab.id, URL: info.URL, Title: info.Title, Active: pg == t.active}
		if op := t.byTarget[pg.tab.opener]; op != nil {
			ti.Opener = op.tab.id
		}
		out = append(out, ti)
	}
	return out
}

// byID returns the open page with tab ID id.
func (t *tabTracker) byID(id string) *Page {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pg := range t.pages {
		if pg.tab.id == id {
			return pg
		}
	}
	return nil
}

// activate makes pg the active page.
func (t *tabTracker) activate(pg *Page) {
	t.mu.Lock()
	t.active = pg
	t.mu.Unlock()
}

// bringToFront makes pg the tab in front, as the tab a user works in is:
// only that one renders frames and has the focus.
func (t *tabTracker) bringToFront(ctx context.Context, pg *Page) error {
	t.mu.Lock()
	front := t.front
	t.mu.Unlock()
	if front == pg {
		return nil
	}
	if err := (proto.PageBringToFront{}).Call(pg.p.Context(ctx)); err != nil {
		return classify(fmt.Errorf("bring tab %s to front: %w", pg.tab.id, err))
	}
	t.mu.Lock()
	t.front = pg
	t.mu.Unlock()
	return nil
}

// adoptedCount returns how many popups have been adopted so far, and how
// many are being adopted.
func (t *tabTracker) adoptedCount() (adopted, adopting int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.adopted, t.adopting
}

// newestSince returns the most recently adopted page among those adopted
// after the first n, or nil.
func (t *tabTracker) newestSince(n int) *Page {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.adopted <= n {
		return nil
	}
	// Popups are appended as they become ready; the newest is last among
	// those with an opener.
	for i := len(t.pages) - 1; i >= 0; i-- {
		if t.pages[i].tab.opener != "" {
			return t.pages[i]
		}
	}
	return nil
}

// options returns the session's action options with defaults applied.
func (t *tabTracker) options() ActionOptions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.opts.withDefaults()
}

// SetActionOptions sets how this session's actions behave: navigation
// policy, files available to upload, dialog policy, timeouts and settling.
// It applies to every tab of the session, popups included.
func (s *Session) SetActionOptions(o ActionOptions) {
	s.tabs.mu.Lock()
	s.tabs.opts = o
	s.tabs.mu.Unlock()
}

// Tabs lists the session's open tabs in the order they were opened.
func (s *Session) Tabs() []TabInfo { return s.tabs.tabs() }

// ActivePage returns the tab actions last ran on (or the popup an action
// opened), nil when every tab is closed.
func (s *Session) ActivePage() *Page {
	s.tabs.mu.Lock()
	defer s.tabs.mu.Unlock()
	return s.tabs.active
}

// TabID returns the page's tab ID ("t1", ...), as listed by Session.Tabs.
func (pg *Page) TabID() string { return pg.tab.id }

// Tabs lists the open tabs of the page's session.
func (pg *Page) Tabs() []TabInfo { return pg.tab.tracker.tabs() }

// emulate applies the emulation settings of opts to page p of browser
// context b (viewport, user agent, locale, timezone).
func emulate(ctx context.Context, b *rod.Browser, p *rod.Page, opts PageOptions) error {
	p = p.Context(ctx)
	if opts.Width == 0 || opts.Height == 0 {
		opts.Width, opts.Height = 1280, 800
	}
	if err := (proto.EmulationSetDeviceMetricsOverride{
		Width: opts.Width, Height: opts.Height, DeviceScaleFactor: 1,
	}).Call(p); err != nil {
		return classify(fmt.Errorf("set viewport: %w", err))
	}
	if opts.UserAgent != "" || opts.Locale != "" {
		ua := opts.UserAgent
		if ua == "" {
			v, err := b.Context(ctx).Version()
			if err != nil {
				return classify(fmt.Errorf("read user agent: %w", err))
			}
			ua = v.UserAgent
		}
		if err := (proto.NetworkSetUserAgentOverride{UserAgent: ua, AcceptLanguage: opts.Locale}).Call(p); err != nil {
			return classify(fmt.Errorf("set user agent: %w", err))
		}
	}
	if opts.Locale != "" {
		if err := (proto.EmulationSetLocaleOverride{Locale: opts.Locale}).Call(p); err != nil {
			return classify(fmt.Errorf("set locale %q: %w", opts.Locale, err))
		}
	}
	if opts.Timezone != "" {
		if err := (proto.EmulationSetTimezoneOverride{TimezoneID: opts.Timezone}).Call(p); err != nil {
			return classify(fmt.Errorf("set timezone %q: %w", opts.Timezone, err))
		}
	}
	return nil
}

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

	// act serialises actions on the page.
	act sync.Mutex

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

func newPageTab(t *tabTracker, pg *Page, opts PageOptions, opener proto.TargetTargetID) *pageTab {
	return &pageTab{
		tracker:  t,
		pg:       pg,
		opts:     opts,
		opener:   opener,
		changed:  make(chan struct{}),
		requests: map[proto.NetworkRequestID]request{},
	}
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
	mainFrame := proto.PageFrameID(pt.pg.p.TargetID)
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
			pt.answerDialog(e, now)
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

// activePage returns the active page, nil when none is open.
func (t *tabTracker) activePage() *Page {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active
}

// takeDialogs returns and forgets the dialogs not yet reported.
func (pt *pageTab) takeDialogs() []DialogEvent {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	d := pt.dialogs
	pt.dialogs = nil
	return d
}
