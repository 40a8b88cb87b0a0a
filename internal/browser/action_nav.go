package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// checkPolicy refuses a URL the run's policy blocks.
func checkPolicy(ctx context.Context, p NavigationPolicy, u string) error {
	if p == nil {
		return nil
	}
	if err := p.Check(ctx, u); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fail(CodeDomainBlocked, "%s: %v", u, err)
	}
	return nil
}

// doNavigate opens a.URL (relative URLs resolve against the page's) after
// the policy allows it, and waits for it to load.
func (pg *Page) doNavigate(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return fail(CodeInvalidParams, "invalid url %q: %v", a.URL, err)
	}
	if !u.IsAbs() {
		cur, _, err := pg.Location(ctx)
		if err != nil {
			return err
		}
		base, err := url.Parse(cur)
		if err != nil || base.Scheme == "about" {
			return fail(CodeInvalidParams, "url %q is relative and the page has no base to resolve it against", a.URL)
		}
		u = base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" && u.String() != "about:blank" {
		return fail(CodeInvalidParams, "url %q: only http and https can be opened", a.URL)
	}
	target := u.String()
	if err := checkPolicy(ctx, opts.Policy, target); err != nil {
		return err
	}
	deadline, _ := ctx.Deadline()
	out.acted, out.navigated = true, true
	err = pg.Navigate(ctx, target, time.Until(deadline))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNavigationTimeout):
		return fail(CodeTimeout, "%s did not load in time", target)
	case errors.Is(err, ErrNavigation):
		return fail(CodeActionFailed, "%v", err)
	}
	return err
}

// doHistory goes one entry back or forward in the page's history.
func (pg *Page) doHistory(ctx context.Context, a Action, out *outcome) error {
	p := pg.p.Context(ctx)
	h, err := proto.PageGetNavigationHistory{}.Call(p)
	if err != nil {
		return classify(fmt.Errorf("read history: %w", err))
	}
	i := h.CurrentIndex - 1
	if a.Kind == ActionForward {
		i = h.CurrentIndex + 1
	}
	if i < 0 || i >= len(h.Entries) {
		where := map[ActionKind]string{ActionBack: "previous", ActionForward: "next"}[a.Kind]
		return fail(CodeActionFailed, "there is no %s page in this tab's history", where)
	}
	if err := checkPolicy(ctx, pg.tab.tracker.options().Policy, h.Entries[i].URL); err != nil {
		return err
	}
	before := pg.tab.state(time.Now()).navSeq
	out.acted, out.navigated = true, true
	if err := (proto.PageNavigateToHistoryEntry{EntryID: h.Entries[i].ID}).Call(p); err != nil {
		return classify(fmt.Errorf("go %s: %w", a.Kind, err))
	}
	return pg.waitNavigation(ctx, before)
}

// doReload reloads the page.
func (pg *Page) doReload(ctx context.Context, out *outcome) error {
	before := pg.tab.state(time.Now()).navSeq
	out.acted, out.navigated = true, true
	if err := (proto.PageReload{}).Call(pg.p.Context(ctx)); err != nil {
		return classify(fmt.Errorf("reload: %w", err))
	}
	return pg.waitNavigation(ctx, before)
}

// defaultScrollAmount is how far a directional scroll goes (seed 002).
const defaultScrollAmount = 300

// doScroll brings an element into view or scrolls by a direction.
func (pg *Page) doScroll(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	amount := a.Amount
	if amount == 0 {
		amount = defaultScrollAmount
	}
	var r struct {
		None bool `json:"none"`
		ScrollPosition
		Moved bool `json:"moved"`
	}
	if a.Ref != "" || a.Target != nil {
		el, err := pg.locate(ctx, a.Ref, a.SnapshotID, a.Target, opts, out.res)
		if err != nil {
			return err
		}
		st, err := el.state(ctx)
		if err != nil {
			return err
		}
		if err := el.checkVisible(st); err != nil {
			return err
		}
		out.acted = true
		fn := jsScrollIntoView
		if a.Direction != "" {
			fn = jsScroll
		}
		if err := el.call(ctx, fn, &r, a.Direction, amount); err != nil {
			return err
		}
	} else {
		out.acted = true
		args, _ := json.Marshal([]any{a.Direction, amount})
		if err := evalValue(ctx, pg.p, "("+jsScroll+").apply(undefined, "+string(args)+")", &r); err != nil {
			return err
		}
	}
	switch {
	case r.None:
		out.res.Note = "nothing to scroll: the content fits in the viewport"
		return nil
	case !r.Moved && a.Direction != "":
		out.res.Note = fmt.Sprintf("%s cannot scroll %s any further", r.Container, a.Direction)
	}
	out.res.Scroll = &ScrollPosition{Container: r.Container, X: r.X, Y: r.Y, MaxX: r.MaxX, MaxY: r.MaxY}
	return nil
}

// doWait waits for one condition, at most the action's timeout.
func (pg *Page) doWait(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	deadline, _ := ctx.Deadline()
	limit := time.Until(deadline).Round(time.Millisecond)
	switch {
	case a.Duration > 0:
		if a.Duration > limit {
			return fail(CodeInvalidParams, "duration %s is longer than the action's timeout %s", a.Duration, limit)
		}
		t := time.NewTimer(a.Duration)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case a.Text != "":
		return pg.waitText(ctx, a.Text, limit)
	case a.Navigation:
		if err := pg.waitNavigation(ctx, pg.tab.state(time.Now()).navSeq); err != nil {
			return fail(CodeTimeout, "no navigation within %s", limit)
		}
		out.acted, out.navigated = true, true
		return nil
	case a.NetworkIdle:
		if busy := pg.waitNetworkQuiet(ctx, time.Time{}, opts.Settle.Quiet); busy != "" {
			return fail(CodeTimeout, "the page was still busy (%s) after %s", busy, limit)
		}
		return nil
	}
	// An element: wait until it is there and visible.
	find := func(ctx context.Context) (*element, error) {
		var res ActionResult
		var el *element
		var err error
		if a.Ref != "" {
			el, err = pg.resolveRef(ctx, a.SnapshotID, a.Ref, &res)
		} else {
			el, err = pg.resolveTargetOnce(ctx, a.Target, &res)
		}
		if err != nil || el == nil {
			if isCode(err, CodeRefInvalid) && a.Ref != "" {
				return nil, err
			}
			return nil, nil
		}
		if el.point != nil {
			return el, nil
		}
		st, err := el.state(ctx)
		if err != nil || st.Hidden != "" {
			return nil, nil
		}
		out.res.Strategy, out.res.Element, out.res.Note = res.Strategy, st.Desc, res.Note
		return el, nil
	}
	el, err := pollFind(ctx, limit, find)
	if err != nil {
		return err
	}
	if el == nil {
		return fail(CodeTimeout, "the element did not become visible within %s", limit)
	}
	return nil
}

// contextGone reports whether err says the page's document (its
// JavaScript context) went away, as it does during a navigation.
func contextGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "context was destroyed") || strings.Contains(msg, "Cannot find context") ||
		strings.Contains(msg, "navigated or closed")
}

func isCode(err error, code ErrorCode) bool {
	var ae *ActionError
	return errors.As(err, &ae) && ae.Code == code
}

// waitText waits until the page's text contains text, re-arming after each
// navigation.
func (pg *Page) waitText(ctx context.Context, text string, limit time.Duration) error {
	for {
		deadline, _ := ctx.Deadline()
		left := time.Until(deadline)
		if left <= 0 {
			return fail(CodeTimeout, "the text %q did not appear within %s", text, limit)
		}
		args, _ := json.Marshal([]any{text, left.Milliseconds(), false})
		var found bool
		err := evalValue(ctx, pg.p, "("+jsWaitText+").apply(undefined, "+string(args)+")", &found)
		switch {
		case err == nil && found:
			return nil
		case err == nil || ctx.Err() != nil:
			return fail(CodeTimeout, "the text %q did not appear within %s", text, limit)
		case !contextGone(err):
			return err
		}
		// The document went away under the wait (a navigation): wait for
		// the next one to load, then look again.
		if busy := pg.waitNetworkQuiet(ctx, time.Now(), 0); busy != "" {
			return fail(CodeTimeout, "the text %q did not appear within %s", text, limit)
		}
	}
}
