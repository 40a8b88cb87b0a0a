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
//
// Popups are caught by a browser-target session that auto-attaches to
// every new page; Chromium holds a page so attached until it is resumed, so
// the tracker turns a popup's events and emulation on before the popup runs
// a line of script (a dialog its first script opens is answered, not left
// blocking the page for good), and resumes every other page at once.
type tabTracker struct {
	b      *rod.Browser // the session's browser context, bound to ctx
	root   proto.TargetSessionID
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// act serialises the session's actions: one mouse and keyboard, and
	// only the tab in front renders (an accessibility query on a tab in the
	// background waits for a frame that never comes).
	act sync.Mutex
	// work counts the goroutines the event loop starts (adoptions,
	// releases, refreshes); stop waits for them.
	work sync.WaitGroup

	mu        sync.Mutex
	opts      ActionOptions
	pages     []*Page // ready tabs, in the order they were opened
	byTarget  map[proto.TargetTargetID]*Page
	bySession map[proto.TargetSessionID]*pageTab
	info      map[proto.TargetTargetID]proto.TargetTargetInfo
	active    *Page
	front     *Page // the page last brought to the front
	nextID    int
	// adopting counts popups seen but not yet ready; adopted counts those
	// that became ready, so an action can tell which appeared during it.
	adopting int
	adopted  int
	// refused counts the popups closed because MaxTabs were open.
	refused int
	changed chan struct{}
}

// MaxTabs caps the tabs open at once in one Session. A popup (or
// target=_blank page) opened while MaxTabs are open is closed before it
// runs, and the action during which that happened says so in its Note: a
// window.open storm cannot grow tabs, renderers and event routing without
// bound.
const MaxTabs = 20

// cdpCall bounds the tracker's own CDP calls.
const cdpCall = 5 * time.Second

// newTabTracker starts following the pages of the browser context b. It
// runs until stop or until the browser connection ends.
func newTabTracker(ctx context.Context, b *rod.Browser) (*tabTracker, error) {
	tctx, cancel := context.WithCancel(b.GetContext())
	t := &tabTracker{
		b:         b.Context(tctx),
		ctx:       tctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		byTarget:  map[proto.TargetTargetID]*Page{},
		bySession: map[proto.TargetSessionID]*pageTab{},
		info:      map[proto.TargetTargetID]proto.TargetTargetInfo{},
		changed:   make(chan struct{}),
	}
	events := t.b.Event() // subscribed before anything is attached
	res, err := proto.TargetAttachToBrowserTarget{}.Call(b.Context(ctx))
	if err != nil {
		cancel()
		return nil, classify(fmt.Errorf("follow tabs: attach to browser: %w", err))
	}
	t.root = res.SessionID
	go t.run(events)
	err = proto.TargetSetAutoAttach{
		AutoAttach: true, Flatten: true,
		Filter: proto.TargetTargetFilter{{Type: "page"}, {Exclude: true}},
	}.Call(t.session(ctx, t.root))
	if err != nil {
		t.stop()
		return nil, classify(fmt.Errorf("follow tabs: auto-attach: %w", err))
	}
	return t, nil
}

// stop detaches the tracker's browser-target session (and with it the
// popup sessions it created) and ends the tracker.
func (t *tabTracker) stop() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), cdpCall)
	_ = proto.TargetDetachFromTarget{SessionID: t.root}.Call(t.b.Context(ctx))
	cancel()
	t.cancel()
	<-t.done
	t.work.Wait()
}

// spawn runs f on its own goroutine, counted for stop. Only the event loop
// spawns, so nothing is added once stop has seen the loop end.
func (t *tabTracker) spawn(f func()) {
	t.work.Add(1)
	go func() {
		defer t.work.Done()
		f()
	}()
}

// session addresses the flat session id with ctx.
func (t *tabTracker) session(ctx context.Context, id proto.TargetSessionID) *flatSession {
	return &flatSession{b: t.b, id: id, ctx: ctx}
}

// flatSession sends CDP commands to one flat session of the connection.
type flatSession struct {
	b   *rod.Browser
	id  proto.TargetSessionID
	ctx context.Context
}

// Call implements proto.Client.
func (c *flatSession) Call(ctx context.Context, sessionID, method string, params any) ([]byte, error) {
	return c.b.Call(ctx, sessionID, method, params)
}

// GetSessionID implements proto.Sessionable.
func (c *flatSession) GetSessionID() proto.TargetSessionID { return c.id }

// GetContext implements proto.Contextable.
func (c *flatSession) GetContext() context.Context { return c.ctx }

// notifyLocked wakes everyone waiting for a change. t.mu must be held.
func (t *tabTracker) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// adopt makes pg, a page the run opened, one of the session's tabs: it
// enables the events the actions rely on and routes them to pg.
func (t *tabTracker) adopt(ctx context.Context, pg *Page, opts PageOptions) error {
	pt := newPageTab(t, pg, opts, "", pg.p.SessionID, func(ctx context.Context) proto.Client { return pg.p.Context(ctx) })

	t.mu.Lock()
	t.bySession[pt.session] = pt
	t.byTarget[pt.target] = pg
	t.ready(pg)
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

// ready lists pg as an open tab. t.mu must be held.
func (t *tabTracker) ready(pg *Page) {
	t.nextID++
	pg.tab.id = "t" + strconv.Itoa(t.nextID)
	t.pages = append(t.pages, pg)
	if t.active == nil {
		t.active = pg
	}
}

// run routes the browser's events until the tracker stops.
func (t *tabTracker) run(events <-chan *rod.Message) {
	defer close(t.done)
	for msg := range events {
		switch msg.Method {
		case "Target.attachedToTarget":
			var e proto.TargetAttachedToTarget
			if msg.SessionID == t.root && msg.Load(&e) {
				t.attached(e)
			}
		case "Target.targetInfoChanged":
			var e proto.TargetTargetInfoChanged
			if msg.Load(&e) && t.ours(e.TargetInfo) {
				t.mu.Lock()
				if t.byTarget[e.TargetInfo.TargetID] != nil {
					t.info[e.TargetInfo.TargetID] = *e.TargetInfo
				}
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
			pt := t.bySession[msg.SessionID]
			t.mu.Unlock()
			if pt != nil {
				pt.handle(msg)
			}
		}
	}
}

func (t *tabTracker) ours(info *proto.TargetTargetInfo) bool {
	return info != nil && info.Type == proto.TargetTargetInfoTypePage &&
		info.BrowserContextID == t.b.BrowserContextID
}

// attached handles the auto-attach of a new page: a page opened by one of
// the session's tabs is adopted through that session, whose events are
// routed from now on; any other page is left alone.
func (t *tabTracker) attached(e proto.TargetAttachedToTarget) {
	info := e.TargetInfo
	t.mu.Lock()
	opener := t.byTarget[info.OpenerID]
	if !t.ours(info) || info.OpenerID == "" || opener == nil || t.byTarget[info.TargetID] != nil {
		t.mu.Unlock()
		t.spawn(func() { t.release(e.SessionID) })
		return
	}
	if len(t.pages)+t.adopting >= MaxTabs {
		t.refused++
		t.notifyLocked()
		t.mu.Unlock()
		t.spawn(func() { t.refuse(e.SessionID, info.TargetID) })
		return
	}
	pg := &Page{}
	newPageTab(t, pg, opener.tab.opts, info.OpenerID, e.SessionID, func(ctx context.Context) proto.Client {
		return t.session(ctx, e.SessionID)
	})
	pg.tab.target = info.TargetID
	t.bySession[e.SessionID] = pg.tab
	t.byTarget[info.TargetID] = pg
	t.info[info.TargetID] = *info
	t.adopting++
	t.notifyLocked()
	t.mu.Unlock()
	t.spawn(func() { t.adoptPopup(pg) })
}

// release resumes a page the tracker does not follow and drops its
// session to it.
func (t *tabTracker) release(id proto.TargetSessionID) {
	ctx, cancel := context.WithTimeout(t.ctx, cdpCall)
	defer cancel()
	_ = proto.RuntimeRunIfWaitingForDebugger{}.Call(t.session(ctx, id))
	_ = proto.TargetDetachFromTarget{SessionID: id}.Call(t.session(ctx, t.root))
}

// refuse closes a popup opened while MaxTabs were open. It is resumed
// first: a page held waiting for the debugger cannot be closed, and its
// opener's window.open (and the input event that ran it) waits for it.
func (t *tabTracker) refuse(id proto.TargetSessionID, target proto.TargetTargetID) {
	ctx, cancel := context.WithTimeout(t.ctx, cdpCall)
	defer cancel()
	t.release(id)
	_, _ = proto.TargetCloseTarget{TargetID: target}.Call(t.b.Context(ctx))
}

// refusedCount returns how many popups were closed because MaxTabs were
// open.
func (t *tabTracker) refusedCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}

// adoptPopup turns on the popup's events and the opener's emulation,
// resumes it, opens the rod page actions use, and lists the popup as a tab.
func (t *tabTracker) adoptPopup(pg *Page) {
	pt := pg.tab
	ctx, cancel := context.WithTimeout(t.ctx, 2*cdpCall)
	defer cancel()
	err := func() error {
		c := pt.client(ctx)
		if err := (proto.PageEnable{}).Call(c); err != nil {
			return err
		}
		if err := (proto.NetworkEnable{}).Call(c); err != nil {
			return err
		}
		if err := emulate(ctx, t.b, c, pt.opts); err != nil {
			return err
		}
		if err := (proto.RuntimeRunIfWaitingForDebugger{}).Call(c); err != nil {
			return err
		}
		rp, err := t.b.Context(t.ctx).PageFromTarget(pt.target)
		if err != nil {
			return err
		}
		t.mu.Lock()
		pg.p = rp
		t.mu.Unlock()
		return nil
	}()
	t.mu.Lock()
	t.adopting--
	switch {
	case err == nil && t.byTarget[pt.target] == pg:
		t.ready(pg)
		t.adopted++
	case err == nil: // closed meanwhile
	default:
		delete(t.bySession, pt.session)
		delete(t.byTarget, pt.target)
	}
	t.notifyLocked()
	t.mu.Unlock()
	if err != nil {
		t.release(pt.session) // never leave a page held: it still runs, unfollowed
	}
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
	delete(t.bySession, pg.tab.session)
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

// refresh re-reads the URL and title of the session's tabs: Chromium's
// target events carry URLs but not titles.
func (t *tabTracker) refresh(ctx context.Context) error {
	r, err := proto.TargetGetTargets{}.Call(t.b.Context(ctx))
	if err != nil {
		return classify(fmt.Errorf("list tabs: %w", err))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, info := range r.TargetInfos {
		if _, ok := t.byTarget[info.TargetID]; ok {
			t.info[info.TargetID] = *info
		}
	}
	return nil
}

// tabs lists the open tabs in the order they were opened.
func (t *tabTracker) tabs() []TabInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]TabInfo, 0, len(t.pages))
	for _, pg := range t.pages {
		info := t.info[pg.tab.target]
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

// activePage returns the active page, nil when none is open.
func (t *tabTracker) activePage() *Page {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active
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

// emulate applies the emulation settings of opts to the page that session
// p addresses in browser context b (viewport, user agent, locale,
// timezone). The settings last as long as that session.
func emulate(ctx context.Context, b *rod.Browser, p proto.Client, opts PageOptions) error {
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
