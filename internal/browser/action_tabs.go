package browser

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// closeTabWait bounds the wait for a tab to close (its beforeunload
// handlers run first).
const closeTabWait = 5 * time.Second

// unknownTab is the invalid_params error for a tab ID that is not open.
func (t *tabTracker) unknownTab(id string) error {
	var ids []string
	for _, ti := range t.tabs() {
		ids = append(ids, ti.ID)
	}
	return fail(CodeInvalidParams, "no open tab %q (open: %s)", id, strings.Join(ids, ", "))
}

// doSwitchTab makes tab a.Tab active and brings it to the front.
func (pg *Page) doSwitchTab(ctx context.Context, a Action, out *outcome) error {
	t := pg.tab.tracker
	target := t.byID(a.Tab)
	if target == nil {
		return t.unknownTab(a.Tab)
	}
	if err := t.bringToFront(ctx, target); err != nil {
		return err
	}
	t.activate(target)
	out.res.Page = target
	out.res.Tabs = t.tabs()
	return nil
}

// doCloseTab closes tab a.Tab (default: this page's), running its
// beforeunload handlers; its opener, or the most recent other tab, becomes
// active.
func (pg *Page) doCloseTab(ctx context.Context, a Action, out *outcome) error {
	t := pg.tab.tracker
	id := a.Tab
	if id == "" {
		id = pg.tab.id
	}
	target := t.byID(id)
	if target == nil {
		return t.unknownTab(id)
	}
	if len(t.tabs()) == 1 {
		return fail(CodeInvalidParams, "tab %s is the only tab; it cannot be closed", id)
	}
	out.acted = true
	if err := (proto.PageClose{}).Call(target.p.Context(ctx)); err != nil {
		return classify(fmt.Errorf("close tab %s: %w", id, err))
	}
	wctx, cancel := context.WithTimeout(ctx, closeTabWait)
	defer cancel()
	for {
		target.tab.mu.Lock()
		closed, changed := target.tab.closed, target.tab.changed
		target.tab.mu.Unlock()
		if closed {
			break
		}
		select {
		case <-changed:
			continue
		case <-wctx.Done():
		}
		out.res.Dialogs = appendDialogs(out.res.Dialogs, target.tab.takeDialogs())
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fail(CodeActionFailed, "tab %s did not close (a beforeunload dialog may have kept it open)", id)
	}
	if target != pg {
		out.res.Dialogs = appendDialogs(out.res.Dialogs, target.tab.takeDialogs())
	}
	out.res.Page = t.activePage()
	out.res.Tabs = t.tabs()
	return nil
}
