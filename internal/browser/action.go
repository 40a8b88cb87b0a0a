package browser

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ActionKind names an action.
type ActionKind string

// The actions Page.Do performs. Each lists the Action fields it reads.
const (
	// ActionClick clicks an element (Ref or Target; a Target with only X/Y
	// clicks at that point).
	ActionClick ActionKind = "click"
	// ActionDoubleClick double-clicks an element.
	ActionDoubleClick ActionKind = "double_click"
	// ActionRightClick right-clicks an element (opens its context menu).
	ActionRightClick ActionKind = "right_click"
	// ActionHover moves the mouse over an element.
	ActionHover ActionKind = "hover"
	// ActionFill replaces a text field's content with Value.
	ActionFill ActionKind = "fill"
	// ActionType types Value key by key into the element (or the focused
	// element when no Ref or Target is given), keeping existing content.
	ActionType ActionKind = "type"
	// ActionPress presses Keys: a key ("Enter") or a chord ("Control+A"),
	// several separated by spaces ("Tab Tab Enter"); focuses the element
	// first when a Ref or Target is given.
	ActionPress ActionKind = "press"
	// ActionSelect picks the option Value (or Values, for a multiple
	// select) by value or visible text in a native <select> or an ARIA
	// combobox or listbox.
	ActionSelect ActionKind = "select"
	// ActionCheck checks a checkbox, radio button or switch.
	ActionCheck ActionKind = "check"
	// ActionUncheck unchecks a checkbox or switch.
	ActionUncheck ActionKind = "uncheck"
	// ActionScroll scrolls an element into view (Ref or Target), or scrolls
	// by Direction (up, down, left, right; Amount pixels, default 300) or
	// to the top or bottom: the page, or the element when one is given.
	ActionScroll ActionKind = "scroll"
	// ActionNavigate opens URL in the page.
	ActionNavigate ActionKind = "navigate"
	// ActionBack goes back in the page's history.
	ActionBack ActionKind = "back"
	// ActionForward goes forward in the page's history.
	ActionForward ActionKind = "forward"
	// ActionReload reloads the page.
	ActionReload ActionKind = "reload"
	// ActionWait waits for exactly one of: Text to appear, an element (Ref
	// or Target) to be visible, a Navigation to finish, the network to be
	// idle (NetworkIdle), or Duration to pass; at most Timeout.
	ActionWait ActionKind = "wait"
	// ActionDrag drags from an element or point (Ref or Target) to another
	// (ToRef or ToTarget).
	ActionDrag ActionKind = "drag"
	// ActionUpload sets Files (from ActionOptions.UploadFiles) on a file
	// input, or on the file chooser that clicking the element opens.
	ActionUpload ActionKind = "upload"
	// ActionSwitchTab makes tab Tab the active one.
	ActionSwitchTab ActionKind = "switch_tab"
	// ActionCloseTab closes tab Tab (default: this page's tab).
	ActionCloseTab ActionKind = "close_tab"
	// ActionExtract reads rows of fields from the page (Extract).
	ActionExtract ActionKind = "extract"
	// ActionGetCookies returns the session's cookies (those sent to URL
	// when it is set).
	ActionGetCookies ActionKind = "get_cookies"
	// ActionSetCookies stores Cookies in the session.
	ActionSetCookies ActionKind = "set_cookies"
	// ActionScreenshot captures the viewport, or the whole page (FullPage),
	// as PNG (or Format "jpeg" at Quality).
	ActionScreenshot ActionKind = "screenshot"
)

// Action is one thing to do to a page. Which fields apply depends on Kind
// (see the Action* constants); others must be empty. Elements are named by
// Ref (from the page's latest snapshot) or by Target, not both.
type Action struct {
	Kind ActionKind `json:"kind"`
	// Ref is an element ref of the page's latest snapshot ("@e3").
	Ref string `json:"ref,omitempty"`
	// SnapshotID, when set, must be the snapshot Ref came from; a ref of an
	// older snapshot is then refused as ref_invalid instead of guessed.
	SnapshotID string `json:"snapshot_id,omitempty"`
	// Target finds the element by CSS, role and name, text or coordinates.
	Target *Target `json:"target,omitempty"`
	// ToRef and ToTarget are the drop place of a drag.
	ToRef    string  `json:"to_ref,omitempty"`
	ToTarget *Target `json:"to_target,omitempty"`
	// Value is the text to fill or type, or the option to select.
	Value string `json:"value,omitempty"`
	// Values are the options of a multiple select.
	Values []string `json:"values,omitempty"`
	// Keys to press: "Enter", "Control+A", "Shift+Tab Enter".
	Keys string `json:"keys,omitempty"`
	// URL to navigate to; for get_cookies, the URL whose cookies to list.
	URL string `json:"url,omitempty"`
	// Direction (up, down, left, right, top, bottom) and Amount (pixels,
	// default 300) of a scroll.
	Direction string `json:"direction,omitempty"`
	Amount    int    `json:"amount,omitempty"`
	// Text to wait for (case-insensitive, anywhere in the page's text).
	Text string `json:"text,omitempty"`
	// Navigation waits for the page to navigate and load.
	Navigation bool `json:"navigation,omitempty"`
	// NetworkIdle waits until no request has been in flight for the settle
	// quiet period.
	NetworkIdle bool `json:"network_idle,omitempty"`
	// Duration to wait; at most the action's timeout.
	Duration time.Duration `json:"duration,omitempty"`
	// Files to upload: paths (or base names) from ActionOptions.UploadFiles.
	Files []string `json:"files,omitempty"`
	// Tab is the tab ID for switch_tab and close_tab.
	Tab string `json:"tab,omitempty"`
	// Extract is the schema of an extract action.
	Extract *ExtractSpec `json:"extract,omitempty"`
	// Cookies to set.
	Cookies []Cookie `json:"cookies,omitempty"`
	// FullPage captures the whole page instead of the viewport; Format
	// ("png", the default, or "jpeg") and Quality (JPEG, default 80) shape
	// the image of a screenshot.
	FullPage bool   `json:"full_page,omitempty"`
	Format   string `json:"format,omitempty"`
	Quality  int    `json:"quality,omitempty"`
	// Dialog answers the JavaScript dialogs opened during this action,
	// instead of the session's policy.
	Dialog *DialogPolicy `json:"dialog,omitempty"`
	// Timeout of the action, settling excluded. Default:
	// ActionOptions.Timeout.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// NavigationPolicy decides whether the run may open a URL; the domain
// guard (guard.Policy) is one.
type NavigationPolicy interface {
	Check(ctx context.Context, url string) error
}

// ActionOptions configure the actions of a Session (Session.
// SetActionOptions). The zero value is usable.
type ActionOptions struct {
	// Policy checks every URL navigate opens; a refusal is domain_blocked.
	// Default: none (the network guard still applies to every request).
	Policy NavigationPolicy
	// UploadFiles are the only files upload may use (absolute paths).
	// Default: none.
	UploadFiles []string
	// Dialogs answers JavaScript dialogs. Default: accept all.
	Dialogs DialogPolicy
	// Timeout of an action that sets none. Default 15s.
	Timeout time.Duration
	// StrategyTimeout is how long each Target strategy (CSS, role, text)
	// waits for a match before the next is tried. Default 3s.
	StrategyTimeout time.Duration
	// Settle bounds the wait for the page to settle after an action.
	Settle SettleOptions
	// Snapshot shapes the snapshot every result carries. Default: the
	// default snapshot.
	Snapshot SnapshotOptions
}

// Defaults of ActionOptions.
const (
	DefaultActionTimeout   = 15 * time.Second
	DefaultStrategyTimeout = 3 * time.Second
)

func (o ActionOptions) withDefaults() ActionOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultActionTimeout
	}
	if o.StrategyTimeout <= 0 {
		o.StrategyTimeout = DefaultStrategyTimeout
	}
	o.Settle = o.Settle.withDefaults()
	return o
}

// ErrorCode is the one vocabulary of action failures the model sees.
type ErrorCode string

// Action error codes.
const (
	// CodeRefInvalid: the ref is unknown, from an older snapshot, or its
	// element left the page with no equivalent replacement.
	CodeRefInvalid ErrorCode = "ref_invalid"
	// CodeElementDisabled: the element is disabled (or read-only for text
	// entry).
	CodeElementDisabled ErrorCode = "element_disabled"
	// CodeElementObscured: another element covers the point to click; the
	// error names it.
	CodeElementObscured ErrorCode = "element_obscured"
	// CodeElementNotVisible: the element is hidden, has no size, or cannot
	// be brought into the viewport.
	CodeElementNotVisible ErrorCode = "element_not_visible"
	// CodeActionFailed: anything else went wrong (no element matched, the
	// browser refused, the page did not react as required).
	CodeActionFailed ErrorCode = "action_failed"
	// CodeTimeout: the action did not finish within its timeout.
	CodeTimeout ErrorCode = "timeout"
	// CodeInvalidParams: the action's fields are missing or conflicting.
	CodeInvalidParams ErrorCode = "invalid_params"
	// CodeDomainBlocked: the run's policy refuses the URL.
	CodeDomainBlocked ErrorCode = "domain_blocked"
)

// ActionError is an action failure in the action vocabulary.
type ActionError struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	// Covering describes the element that obscures the target
	// (element_obscured only).
	Covering string `json:"covering,omitempty"`
}

func (e *ActionError) Error() string { return string(e.Code) + ": " + e.Message }

// Is makes errors.Is(err, ErrRefInvalid) hold for ref_invalid errors.
func (e *ActionError) Is(target error) bool {
	return target == ErrRefInvalid && e.Code == CodeRefInvalid
}

// fail builds an *ActionError.
func fail(code ErrorCode, format string, args ...any) *ActionError {
	return &ActionError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Strategy names how the element of an action was found.
type Strategy string

// Targeting strategies, in the order a Target tries them.
const (
	StrategyRef         Strategy = "ref"
	StrategyCSS         Strategy = "css"
	StrategyRole        Strategy = "role"
	StrategyText        Strategy = "text"
	StrategyCoordinates Strategy = "coordinates"
)

// ActionResult is what an action did. Failures of the action itself are in
// Error (Success false); Do returns a Go error only when the page cannot be
// used any more (browser gone, ctx ended).
type ActionResult struct {
	Kind    ActionKind   `json:"kind"`
	Success bool         `json:"success"`
	Error   *ActionError `json:"error,omitempty"`
	// Strategy found the element; Attempts lists the strategies tried
	// before it, with why each failed.
	Strategy Strategy  `json:"strategy,omitempty"`
	Attempts []Attempt `json:"attempts,omitempty"`
	// Element describes the element acted on.
	Element string `json:"element,omitempty"`
	// Note explains something the model should know, such as a ref whose
	// element the page replaced with an equivalent one.
	Note string `json:"note,omitempty"`
	// Value is the field's value after fill, type or select.
	Value string `json:"value,omitempty"`
	// Checked is the state after check or uncheck.
	Checked *bool `json:"checked,omitempty"`
	// URL of the active page after the action.
	URL string `json:"url,omitempty"`
	// Navigated is true when the page loaded a new document or changed its
	// URL during the action.
	Navigated bool `json:"navigated,omitempty"`
	// Dialogs are the JavaScript dialogs answered since the last action.
	Dialogs []DialogEvent `json:"dialogs,omitempty"`
	// Tab is the active tab after the action; OpenedTab is true when the
	// action opened it (a popup or a new tab).
	Tab       string `json:"tab,omitempty"`
	OpenedTab bool   `json:"opened_tab,omitempty"`
	// Tabs lists the open tabs after switch_tab and close_tab.
	Tabs []TabInfo `json:"tabs,omitempty"`
	// Rows and RowsMatched are the result of extract.
	Rows        []map[string]string `json:"rows,omitempty"`
	RowsMatched int                 `json:"rows_matched,omitempty"`
	// Cookies are the result of get_cookies.
	Cookies []Cookie `json:"cookies,omitempty"`
	// Screenshot is the image of screenshot.
	Screenshot *Image `json:"screenshot,omitempty"`
	// Scroll is the scroll position after a scroll.
	Scroll *ScrollPosition `json:"scroll,omitempty"`
	// Settle reports the wait for the page to settle.
	Settle SettleReport `json:"settle"`
	// Duration of the action and its settling (the snapshot excluded).
	Duration time.Duration `json:"duration"`
	// Snapshot is the active page after the action, taken after settling,
	// with the result's Dialogs; SnapshotError says why it is missing.
	Snapshot      *Snapshot `json:"snapshot,omitempty"`
	SnapshotError string    `json:"snapshot_error,omitempty"`
	// Page is the active page after the action: the popup the action
	// opened, the tab switched to, or the page itself. The next action goes
	// to it.
	Page *Page `json:"-"`
}

// Attempt is one strategy tried to find an element.
type Attempt struct {
	Strategy Strategy `json:"strategy"`
	Error    string   `json:"error"`
}

// ScrollPosition is where a scrolled container is.
type ScrollPosition struct {
	// Container describes what scrolled (the page or an element).
	Container string  `json:"container"`
	X         float64 `json:"x"`
	Y         float64 `json:"y"`
	// MaxX and MaxY are the largest possible scroll offsets.
	MaxX float64 `json:"max_x"`
	MaxY float64 `json:"max_y"`
}

// outcome is what an action implementation reports back to Do.
type outcome struct {
	res *ActionResult
	// acted is set once the action may have changed the page, so Do
	// settles even when it then failed.
	acted bool
	// navigated: the action itself waited for a navigation.
	navigated bool
}

// Do performs a on the page, waits for the page to settle and reports what
// happened, with a fresh snapshot of the active page. Failures of the action
// are in the result (Success false, Error set); the returned error is
// reserved for a browser that is gone or a ctx that ended, after which the
// page cannot be used.
func (pg *Page) Do(ctx context.Context, a Action) (*ActionResult, error) {
	start := time.Now()
	tab := pg.tab
	tab.tracker.act.Lock()
	defer tab.tracker.act.Unlock()
	opts := tab.tracker.options()
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = opts.Timeout
	}
	if tab.isClosed() {
		res := &ActionResult{Kind: a.Kind, Error: fail(CodeActionFailed, "tab %s is closed; act on the active tab", tab.id)}
		pg.follow(ctx, res, start, 0, opts.Settle)
		if err := pg.describeAfter(ctx, res, opts.Timeout, opts.Snapshot); err != nil || ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", a.Kind, errors.Join(err, context.Cause(ctx)))
		}
		return res, nil
	}
	tab.tracker.activate(pg)
	fctx, cancel := context.WithTimeout(ctx, timeout)
	err := tab.tracker.bringToFront(fctx, pg)
	cancel()
	if errors.Is(err, ErrBrowserGone) || ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", a.Kind, errors.Join(err, context.Cause(ctx)))
	}
	adoptedBefore, _ := tab.tracker.adoptedCount()
	refusedBefore := tab.tracker.refusedCount()
	navBefore := tab.state(start).navSeq
	if a.Dialog != nil {
		tab.setDialogPolicy(a.Dialog)
		defer tab.setDialogPolicy(nil)
	}

	out := &outcome{res: &ActionResult{Kind: a.Kind}}
	actx, cancel := context.WithTimeout(ctx, timeout)
	err = pg.dispatch(actx, a, opts, out)
	cancel()
	res := out.res
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", a.Kind, context.Cause(ctx))
		}
		if errors.Is(err, ErrBrowserGone) {
			return nil, fmt.Errorf("%s: %w", a.Kind, err)
		}
		res.Error = toActionError(err, actx, timeout)
	}
	res.Success = res.Error == nil
	if out.acted || res.Success {
		res.Settle = pg.settle(ctx, start, opts.Settle)
	}
	pg.follow(ctx, res, start, adoptedBefore, opts.Settle)
	if n := tab.tracker.refusedCount() - refusedBefore; n > 0 {
		note := fmt.Sprintf("the page tried to open %d more tabs; they were closed (at most %d tabs are open at once: close_tab frees one)", n, MaxTabs)
		res.Note = strings.TrimPrefix(res.Note+"; "+note, "; ")
	}
	res.Navigated = out.navigated || tab.state(start).navSeq != navBefore
	res.Dialogs = appendDialogs(res.Dialogs, tab.takeDialogs())
	if res.Page != nil && res.Page != pg {
		res.Dialogs = appendDialogs(res.Dialogs, res.Page.tab.takeDialogs())
	}
	res.Duration = time.Since(start)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", a.Kind, context.Cause(ctx))
	}
	if err := pg.describeAfter(ctx, res, opts.Timeout, opts.Snapshot); err != nil || ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", a.Kind, errors.Join(err, context.Cause(ctx)))
	}
	return res, nil
}

// follow decides which page the action leaves active — the one the action
// named (switch or close tab), else a popup it opened (which is let load),
// else this page — and sets res.Page.
func (pg *Page) follow(ctx context.Context, res *ActionResult, start time.Time, adoptedBefore int, so SettleOptions) {
	t := pg.tab.tracker
	switch popup := t.newestSince(adoptedBefore); {
	case res.Page != nil:
	case pg.tab.isClosed():
		res.Page = t.activePage()
	case popup != nil:
		res.Page, res.OpenedTab = popup, true
		t.activate(popup)
		ps := popup.settle(ctx, start, so)
		res.Settle.Duration += ps.Duration
		if ps.Capped {
			res.Settle.Capped, res.Settle.Busy = true, ps.Busy
		}
	default:
		res.Page = pg
	}
}

// describeAfter fills what the model sees after the action: the active
// tab, its URL, the tabs and a fresh snapshot (all within timeout). It
// returns an error only when the browser is gone or ctx ended.
func (pg *Page) describeAfter(ctx context.Context, res *ActionResult, timeout time.Duration, so SnapshotOptions) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := pg.tab.tracker
	if err := t.refresh(ctx); errors.Is(err, ErrBrowserGone) {
		return err
	}
	if res.Tabs != nil {
		res.Tabs = t.tabs()
	}
	active := res.Page
	if active == nil {
		return nil
	}
	res.Tab = active.tab.id
	if url, _, err := active.Location(ctx); err == nil {
		res.URL = url
	}
	snap, err := active.Snapshot(ctx, so)
	switch {
	case err == nil:
		snap.Dialogs = res.Dialogs
		res.Snapshot = snap
	case errors.Is(err, ErrBrowserGone):
		return fmt.Errorf("snapshot: %w", err)
	default:
		res.SnapshotError = err.Error()
	}
	return nil
}

// toActionError classifies an implementation's error.
func toActionError(err error, actx context.Context, timeout time.Duration) *ActionError {
	var ae *ActionError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, ErrRefInvalid):
		return fail(CodeRefInvalid, "%s", err.Error())
	case actx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return fail(CodeTimeout, "the action did not finish within %s: %v", timeout, err)
	default:
		return fail(CodeActionFailed, "%v", err)
	}
}

// dispatch validates a and runs its implementation.
func (pg *Page) dispatch(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	if err := a.validate(); err != nil {
		return err
	}
	switch a.Kind {
	case ActionClick, ActionDoubleClick, ActionRightClick, ActionHover:
		return pg.doPointer(ctx, a, opts, out)
	case ActionDrag:
		return pg.doDrag(ctx, a, opts, out)
	case ActionFill:
		return pg.doFill(ctx, a, opts, out)
	case ActionType:
		return pg.doType(ctx, a, opts, out)
	case ActionPress:
		return pg.doPress(ctx, a, opts, out)
	case ActionSelect:
		return pg.doSelect(ctx, a, opts, out)
	case ActionCheck, ActionUncheck:
		return pg.doCheck(ctx, a, opts, out)
	case ActionUpload:
		return pg.doUpload(ctx, a, opts, out)
	case ActionScroll:
		return pg.doScroll(ctx, a, opts, out)
	case ActionNavigate:
		return pg.doNavigate(ctx, a, opts, out)
	case ActionBack, ActionForward:
		return pg.doHistory(ctx, a, out)
	case ActionReload:
		return pg.doReload(ctx, out)
	case ActionWait:
		return pg.doWait(ctx, a, opts, out)
	case ActionSwitchTab:
		return pg.doSwitchTab(ctx, a, out)
	case ActionCloseTab:
		return pg.doCloseTab(ctx, a, out)
	case ActionExtract:
		return pg.doExtract(ctx, a, out)
	case ActionGetCookies:
		return pg.doGetCookies(ctx, a, out)
	case ActionSetCookies:
		return pg.doSetCookies(ctx, a, opts, out)
	case ActionScreenshot:
		return pg.doScreenshot(ctx, a, out)
	}
	return fail(CodeInvalidParams, "unknown action kind %q", a.Kind)
}
