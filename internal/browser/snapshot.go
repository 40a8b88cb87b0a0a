package browser

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod/lib/proto"
	"github.com/google/uuid"
)

// SnapshotOptions shape one snapshot. The zero value is the default
// snapshot of seed 002 §1.3: at most 100 elements, chosen by priority, with
// no extras.
type SnapshotOptions struct {
	// MaxElements caps the elements listed. Default 100.
	MaxElements int
	// Offset skips that many elements in priority order, so the model can
	// page through a page with more elements than fit. Default 0.
	Offset int
	// Filter keeps only elements whose role, name, value or context
	// contain every word of it (case-insensitive). Default: no filter.
	Filter string
	// ViewportOnly drops elements outside the viewport. Default false:
	// offscreen elements are listed after the visible ones by priority.
	ViewportOnly bool
	// IncludeCovered lists elements fully covered by another element
	// (a modal backdrop, an overlay), marked "covered". Default false:
	// they are counted in Snapshot.Covered and left out.
	IncludeCovered bool
	// Boxes adds each element's box to the text rendering (the JSON always
	// has them). Default false: the model acts by ref, and a vision model
	// gets the set-of-marks screenshot instead.
	Boxes bool
	// VisibleText adds the text shown in the viewport, at most
	// MaxTextChars. Default false.
	VisibleText bool
	// MaxTextChars bounds VisibleText. Default 2000.
	MaxTextChars int
	// HTML adds an HTML snippet of the buttons, links, inputs and selects
	// in the viewport, at most MaxHTMLChars. Default false; forced on when
	// the snapshot is degraded.
	HTML bool
	// MaxHTMLChars bounds HTML. Default 5000.
	MaxHTMLChars int
	// Screenshot, when set, attaches a screenshot taken right after the
	// snapshot. When the accessibility tree is unavailable the snapshot
	// is degraded and a viewport JPEG is attached even when this is nil.
	Screenshot *ScreenshotOptions
	// AXTimeout bounds the accessibility-tree reads of the listed
	// elements; past it the snapshot degrades to roles and names derived
	// from the DOM. Default 2s.
	AXTimeout time.Duration
}

func (o SnapshotOptions) withDefaults() SnapshotOptions {
	if o.MaxElements <= 0 {
		o.MaxElements = 100
	}
	if o.Offset < 0 {
		o.Offset = 0
	}
	if o.MaxTextChars <= 0 {
		o.MaxTextChars = 2000
	}
	if o.MaxHTMLChars <= 0 {
		o.MaxHTMLChars = 5000
	}
	if o.AXTimeout <= 0 {
		o.AXTimeout = 2 * time.Second
	}
	return o
}

// Snapshot is what the model knows about a page at one moment: its
// interactive elements with refs valid for this snapshot only (seed 002
// §1.2–1.3), page and viewport information, and optional extras (seed 003
// §2.1). Text renders it for the model; json.Marshal for the API.
type Snapshot struct {
	// ID names this snapshot; actions given a ref may pass it to make sure
	// the ref is from the latest snapshot.
	ID   string    `json:"snapshot_id"`
	Time time.Time `json:"timestamp"`
	Page PageInfo  `json:"page"`
	// Viewport is the layout viewport and the page's scroll extent.
	Viewport ViewportInfo `json:"viewport"`
	// Elements are listed in document order.
	Elements []Element `json:"elements"`
	// Focused is the ref of the focused element, "" when none is listed.
	Focused string `json:"focused,omitempty"`
	// Total counts the elements that qualify (after Filter); Offset and
	// Remaining say which of them this snapshot lists: Remaining are left
	// out past Offset+len(Elements) and can be asked for by paging or
	// filtering.
	Total     int `json:"total"`
	Offset    int `json:"offset,omitempty"`
	Remaining int `json:"remaining"`
	// Covered counts elements left out because another element covers them.
	Covered int `json:"covered,omitempty"`
	// Filter echoes SnapshotOptions.Filter.
	Filter string `json:"filter,omitempty"`
	// Tabs lists the session's open tabs; Dialogs, the JavaScript dialogs
	// answered since the model last saw the page, is filled by the caller
	// from the actions' results (Page.Snapshot leaves it empty, as taking
	// them would hide them from the action that reports them).
	Tabs    []TabInfo     `json:"tabs,omitempty"`
	Dialogs []DialogEvent `json:"dialogs,omitempty"`
	// VisibleText and HTML are the extras of SnapshotOptions.
	VisibleText string `json:"visible_text,omitempty"`
	HTML        string `json:"html,omitempty"`
	// Screenshot is attached on request or when Degraded.
	Screenshot *Image `json:"screenshot,omitempty"`
	// Degraded says why the snapshot is less than complete (accessibility
	// tree unavailable, a frame out of reach); "" when it is complete.
	Degraded string `json:"degraded,omitempty"`

	boxes bool
}

// PageInfo is the page's identity.
type PageInfo struct {
	URL   string `json:"url"`
	Title string `json:"title"`
}

// ViewportInfo is the viewport size, its scroll position and the page's
// scrollable size, in CSS pixels.
type ViewportInfo struct {
	Width         float64 `json:"width"`
	Height        float64 `json:"height"`
	ScrollX       float64 `json:"scroll_x"`
	ScrollY       float64 `json:"scroll_y"`
	ContentWidth  float64 `json:"content_width"`
	ContentHeight float64 `json:"content_height"`
}

// Element is one element of a snapshot.
type Element struct {
	// Ref is "@eN": N numbers the qualifying elements of the page in
	// document order, so gaps mean elements left out.
	Ref string `json:"ref"`
	// Role is the ARIA role; "clickable" for an element with no
	// interactive role that still reacts to clicks (a div with a click
	// handler or a pointer cursor).
	Role string `json:"role"`
	// Name is the accessible name, at most 200 characters.
	Name string `json:"name"`
	// State lists what applies of: disabled, checked, mixed, pressed,
	// expanded, collapsed, selected, required, readonly, invalid, busy,
	// focused, filled (a password with a value), offscreen, covered.
	State []string `json:"state,omitempty"`
	// Box is the border box in top-page viewport coordinates.
	Box Rect `json:"bbox"`
	// Value is an input's value (never a password's), at most 100
	// characters.
	Value string `json:"value,omitempty"`
	// Options are a select's options (at most 10 listed, then "+N").
	Options []string `json:"options,omitempty"`
	// Level is a heading's level.
	Level int `json:"level,omitempty"`
	// Context is the element's compact surroundings (table row, list
	// item, label, section heading) that tells identical controls apart.
	Context string `json:"context,omitempty"`
	// Hint is the element's id or class when it has no name (icon
	// buttons).
	Hint string `json:"hint,omitempty"`
	// URL is a link's target.
	URL string `json:"url,omitempty"`
}

// ErrSnapshot: the page could not be read at all.
var ErrSnapshot = errors.New("snapshot failed")

// Snapshot reads the page through CDP (DOMSnapshot for the DOM of every
// frame in the page's renderer with layout, styles and paint order, which
// decides what qualifies; then the accessibility node of each listed
// element for its role, name and states), stores the refs it assigns so
// actions can resolve them, and returns it. Shadow roots
// (open and closed) and iframes (same- and cross-origin, when in the page's
// renderer) are included with boxes in top-page coordinates. Errors wrap
// ErrSnapshot or ErrBrowserGone, or are ctx's.
func (pg *Page) Snapshot(ctx context.Context, opts SnapshotOptions) (*Snapshot, error) {
	opts = opts.withDefaults()
	// Only the tab in front renders; the accessibility tree of a tab
	// behind it never answers.
	if pg.tab != nil {
		if err := pg.tab.tracker.bringToFront(ctx, pg); err != nil {
			return nil, err
		}
	}
	p := pg.p.Context(ctx)

	var (
		wg      sync.WaitGroup
		metrics *proto.PageGetLayoutMetricsResult
		metErr  error
		focus   proto.DOMBackendNodeID
	)
	wg.Go(func() { metrics, metErr = proto.PageGetLayoutMetrics{}.Call(p) })
	wg.Go(func() { focus = pg.focusedNode(ctx) })
	capture, err := proto.DOMSnapshotCaptureSnapshot{
		ComputedStyles:    snapshotStyles,
		IncludePaintOrder: true,
	}.Call(p)
	if err != nil {
		wg.Wait()
		return nil, pg.snapshotErr(ctx, fmt.Errorf("capture DOM: %w", err))
	}
	docs := newDomDocs(capture)
	if len(docs) == 0 || len(docs[0].nodeType) == 0 {
		wg.Wait()
		return nil, fmt.Errorf("%w: the page has no document", ErrSnapshot)
	}
	// Where each frame's viewport sits in the top page.
	var mu sync.Mutex
	contentBoxes := make(map[int]Rect, len(docs))
	for _, d := range docs[1:] {
		if d.ownerDoc < 0 {
			continue
		}
		owner := docs[d.ownerDoc].backend[d.owner]
		wg.Go(func() {
			m, err := proto.DOMGetBoxModel{BackendNodeID: owner}.Call(p)
			if err != nil || len(m.Model.Content) < 8 {
				return
			}
			q := m.Model.Content
			mu.Lock()
			contentBoxes[d.index] = Rect{X: q[0], Y: q[1], Width: q[2] - q[0], Height: q[5] - q[1]}
			mu.Unlock()
		})
	}
	wg.Wait()
	if metErr != nil {
		return nil, pg.snapshotErr(ctx, fmt.Errorf("layout metrics: %w", metErr))
	}
	placeFrames(docs, contentBoxes)

	top := docs[0]
	snap := &Snapshot{
		ID:   uuid.NewString(),
		Time: time.Now().UTC(),
		Page: PageInfo{URL: top.url, Title: top.title},
		Viewport: ViewportInfo{
			Width: float64(metrics.CSSLayoutViewport.ClientWidth), Height: float64(metrics.CSSLayoutViewport.ClientHeight),
			ScrollX: top.scrollX, ScrollY: top.scrollY,
			ContentWidth: top.contentW, ContentHeight: top.contentH,
		},
		Filter: opts.Filter,
		boxes:  opts.Boxes,
	}
	b := newBuilder(docs, snap.Viewport, opts)
	b.collect()
	b.dropInert(pg.modalDialogs(ctx, b.openDialogs(), opts.AXTimeout))
	degraded := b.unreachableFrames()
	page := b.choose(snap, func(c *candidate) bool { return focus != 0 && c.doc.backend[c.node] == focus })
	axFailed := pg.describe(ctx, page, opts.AXTimeout)
	if axFailed != nil {
		degraded = append(degraded, fmt.Sprintf("accessibility tree unavailable (%v): roles and names derived from the DOM, screenshot and HTML attached", axFailed))
	}
	pg.refs.storeRefs(snap.ID, b.fill(snap, page))
	if pg.tab != nil {
		snap.Tabs = pg.Tabs()
	}

	if opts.VisibleText {
		snap.VisibleText = visibleText(docs, snap.Viewport, opts.MaxTextChars)
	}
	if opts.HTML || axFailed != nil {
		snap.HTML = htmlSnippet(docs, snap.Viewport, opts.MaxHTMLChars)
	}
	shot := opts.Screenshot
	if shot == nil && axFailed != nil {
		shot = &ScreenshotOptions{Format: FormatJPEG}
	}
	if shot != nil {
		img, err := pg.Capture(ctx, *shot)
		if err != nil {
			return nil, err
		}
		snap.Screenshot = img
	}
	snap.Degraded = strings.Join(degraded, "; ")
	return snap, nil
}

// describe reads the accessibility node of each listed candidate
// (Accessibility.getPartialAXTree, concurrently, within timeout) and
// refines the candidate with it. It returns an error only when the tree
// could be read for none of them; then the DOM's description stands.
func (pg *Page) describe(ctx context.Context, page []*candidate, timeout time.Duration) error {
	if len(page) == 0 {
		return nil
	}
	axCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := pg.p.Context(axCtx)
	nodes := make([]*axNode, len(page))
	errs := make([]error, len(page))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for k, c := range page {
		if c.role == "iframe" {
			continue
		}
		id := c.doc.backend[c.node]
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := proto.AccessibilityGetPartialAXTree{BackendNodeID: id}.Call(p)
			if err != nil {
				errs[k] = err
				return
			}
			nodes[k] = newAXIndex(res.Nodes)[id]
		})
	}
	wg.Wait()
	var firstErr error
	ok := false
	for k, c := range page {
		if errs[k] != nil {
			if firstErr == nil {
				firstErr = errs[k]
			}
			continue
		}
		ok = true
		applyAX(c, nodes[k])
	}
	if ok || firstErr == nil {
		return nil
	}
	if ctx.Err() == nil && axCtx.Err() != nil {
		return fmt.Errorf("no answer within %s", timeout)
	}
	return firstErr
}

// modalDialogs keeps the dialogs that are modal (opened with
// showModal(), which makes the rest of their document inert). Markup
// cannot tell, the accessibility node can; a dialog whose node cannot be
// read is taken as not modal.
func (pg *Page) modalDialogs(ctx context.Context, dialogs []docNode, timeout time.Duration) []docNode {
	if len(dialogs) == 0 {
		return nil
	}
	axCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := pg.p.Context(axCtx)
	modal := make([]bool, len(dialogs))
	var wg sync.WaitGroup
	for k, dn := range dialogs {
		id := dn.doc.backend[dn.node]
		wg.Go(func() {
			res, err := proto.AccessibilityGetPartialAXTree{BackendNodeID: id}.Call(p)
			if err == nil {
				if a := newAXIndex(res.Nodes)[id]; a != nil {
					modal[k] = a.modal
				}
			}
		})
	}
	wg.Wait()
	var out []docNode
	for k, dn := range dialogs {
		if modal[k] {
			out = append(out, dn)
		}
	}
	return out
}

// focusJS finds the focused element through open shadow roots and
// same-origin frames (document.activeElement stops at their hosts).
const focusJS = `(() => {
	let e = document.activeElement;
	for (;;) {
		if (e && e.shadowRoot && e.shadowRoot.activeElement) { e = e.shadowRoot.activeElement; continue; }
		let inner = null;
		try { inner = e && e.contentDocument && e.contentDocument.activeElement; } catch (_) {}
		if (inner) { e = inner; continue; }
		break;
	}
	return e && e !== document.body && e !== document.documentElement ? e : null;
})()`

// focusedNode returns the backend node of the focused element, 0 when none
// or when it cannot be told (the snapshot then names no focus).
func (pg *Page) focusedNode(ctx context.Context) proto.DOMBackendNodeID {
	p := pg.p.Context(ctx)
	const group = "wayfinder-snapshot-focus"
	res, err := proto.RuntimeEvaluate{Expression: focusJS, ObjectGroup: group, Silent: true}.Call(p)
	if err != nil || res.Result.ObjectID == "" {
		return 0
	}
	defer func() { _ = proto.RuntimeReleaseObjectGroup{ObjectGroup: group}.Call(p) }()
	n, err := proto.DOMDescribeNode{ObjectID: res.Result.ObjectID}.Call(p)
	if err != nil {
		return 0
	}
	return n.Node.BackendNodeID
}

// snapshotErr wraps a failed CDP read: the caller's context, the browser
// gone, or ErrSnapshot.
func (pg *Page) snapshotErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("snapshot: %w", context.Cause(ctx))
	}
	err = classify(err)
	if errors.Is(err, ErrBrowserGone) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrSnapshot, err)
}

// placeFrames sets each frame document's origin in the top page's
// viewport: its owner's content box read from DOM.getBoxModel (which
// Chromium reports in the top viewport's coordinates), or failing that the
// owner's border box placed through its own document.
func placeFrames(docs []*domDoc, contentBoxes map[int]Rect) {
	// Owners precede their documents in capture order, so one pass in
	// order places parents first.
	for _, d := range docs[1:] {
		if d.ownerDoc < 0 {
			continue
		}
		if r, ok := contentBoxes[d.index]; ok {
			d.originX, d.originY, d.originOK = r.X, r.Y, true
			d.viewW, d.viewH = r.Width, r.Height
			continue
		}
		if r, ok := docs[d.ownerDoc].box(d.owner); ok {
			d.originX, d.originY, d.originOK = r.X, r.Y, true
			d.viewW, d.viewH = r.Width, r.Height
		}
	}
}
