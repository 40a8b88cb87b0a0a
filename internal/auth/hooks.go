package auth

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/runner"
)

var _ runner.Hooks = (*Auth)(nil)

// BeforeAction implements runner.Hooks: in a browser context that has not
// run it yet, the global callback runs on page before its first action
// (the start URL, or the reopening after a crash). A failure ends the run
// with an authentication error.
func (a *Auth) BeforeAction(ctx context.Context, page *browser.Page, _ *browser.Action) error {
	a.sync(page)
	defer a.flush(ctx)
	if err := a.takeFailure(ctx); err != nil {
		return err
	}
	if a.global == nil {
		return nil
	}
	a.mu.Lock()
	done := a.globalDone
	a.globalDone = true
	a.mu.Unlock()
	if done {
		return nil
	}
	if err := a.runCallback(ctx, page, a.global, ""); err != nil {
		return a.failRun(ctx, a.global, "", err.Error())
	}
	a.tell(ctx, Applied{Method: a.global.Method.Kind(), Credential: a.global.Credential})
	return nil
}

// AfterAction implements runner.Hooks: it runs a binding's login callback
// the first time a page of its host has loaded in the context (then goes
// back to where the page was), and re-authenticates once after a 401/403
// document of a bound host. A second 401/403 from the host, a failed
// callback or a token that cannot be acquired ends the run with an
// authentication error.
func (a *Auth) AfterAction(ctx context.Context, page *browser.Page, _ browser.Action, _ *browser.ActionResult) (runner.HookResult, error) {
	a.sync(page)
	defer a.flush(ctx)
	var hr runner.HookResult
	if err := a.takeFailure(ctx); err != nil {
		return hr, err
	}
	if err := a.firstVisit(ctx, page, &hr); err != nil {
		return hr, err
	}
	if err := a.reauth(ctx, page, &hr); err != nil {
		return hr, err
	}
	if err := a.takeFailure(ctx); err != nil {
		return hr, err
	}
	return hr, nil
}

// sync starts afresh when page belongs to another browser context than
// before (a crashed context was replaced): the new one has not seen the
// callbacks.
func (a *Auth) sync(page *browser.Page) {
	id := page.ContextID()
	a.mu.Lock()
	defer a.mu.Unlock()
	if id == a.ctxID {
		return
	}
	a.ctxID = id
	a.globalDone = false
	clear(a.visited)
	a.docs = nil
}

// flush tells OnApplied what the network layer applied.
func (a *Auth) flush(ctx context.Context) {
	a.mu.Lock()
	pending := a.pending
	a.pending = nil
	a.mu.Unlock()
	for _, ap := range pending {
		a.tell(ctx, ap)
	}
}

func (a *Auth) tell(ctx context.Context, ap Applied) {
	a.opts.Logger.InfoContext(ctx, "auth applied", "domain", ap.Domain, "method", ap.Method,
		"credential", ap.Credential, "reauth", ap.Reauth)
	if a.opts.OnApplied != nil {
		a.opts.OnApplied(ctx, ap)
	}
}

// takeFailure returns (once) the failure the network layer recorded.
func (a *Auth) takeFailure(ctx context.Context) error {
	a.mu.Lock()
	f := a.failed
	a.failed = nil
	a.mu.Unlock()
	if f == nil {
		return nil
	}
	a.report(ctx, *f)
	return f.runError()
}

// failRun is the run-ending error of a binding's failure for host.
func (a *Auth) failRun(ctx context.Context, b *binding, host, reason string) error {
	f := Failure{Domain: host, Method: b.Method.Kind(), Credential: b.Credential, Reason: a.scrub(reason)}
	a.report(ctx, f)
	return f.runError()
}

func (a *Auth) report(ctx context.Context, f Failure) {
	a.opts.Logger.WarnContext(ctx, "auth failed", "domain", f.Domain, "method", f.Method,
		"credential", f.Credential, "reason", f.Reason)
	if a.opts.OnFailed != nil {
		a.opts.OnFailed(ctx, f)
	}
}

// pageHost is the host of the page's document ("" for about:blank).
func pageHost(ctx context.Context, page *browser.Page) (rawURL, host string, err error) {
	rawURL, _, err = page.Location(ctx)
	if err != nil {
		return "", "", err
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return rawURL, "", nil
	}
	return rawURL, u.Hostname(), nil
}

// firstVisit applies what a binding does when a page of its host first
// loads: a callback runs (and the page goes back where it was), a cookie,
// storage or form-login binding is announced.
func (a *Auth) firstVisit(ctx context.Context, page *browser.Page, hr *runner.HookResult) error {
	where, host, err := pageHost(ctx, page)
	if err != nil || host == "" {
		return nil //nolint:nilerr // a page without a location has nothing to apply
	}
	b := a.match(host)
	if b == nil {
		return nil
	}
	switch b.Method.(type) {
	case *Cookies, *LocalStorage:
		a.noteApplied(b, host)
		return nil
	case *Basic:
		if b.Method.Kind() == KindFormLogin {
			a.noteApplied(b, host)
		}
		return nil
	case *Callback:
	default:
		return nil
	}
	k := visitKey{b.index, host}
	a.mu.Lock()
	done := a.visited[k]
	a.visited[k] = true
	a.mu.Unlock()
	if done {
		return nil
	}
	if err := a.runCallback(ctx, page, b, host); err != nil {
		return a.failRun(ctx, b, host, err.Error())
	}
	a.noteApplied(b, host)
	hr.Changed = true
	hr.Notes = append(hr.Notes, fmt.Sprintf("auth: the %s login for %s ran", b.Method.Kind(), host))
	// What the page answered before the login is of no interest.
	a.takeDocs(page.TargetID())
	return a.goBack(ctx, page, where)
}

// goBack navigates page to where, unless it is there.
func (a *Auth) goBack(ctx context.Context, page *browser.Page, where string) error {
	now, _, err := page.Location(ctx)
	if err != nil || now == where {
		return nil //nolint:nilerr // the next observation reports a page that is gone
	}
	if err := page.Navigate(ctx, where, a.opts.NavigationTimeout); err != nil {
		if errors.Is(err, browser.ErrBrowserGone) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("auth: going back to %s after the login: %w", where, err)
	}
	return nil
}

// takeDocs removes the recorded 401/403 documents and returns those of
// target.
func (a *Auth) takeDocs(target string) []browser.DocumentResponse {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []browser.DocumentResponse
	for _, d := range a.docs {
		if d.TargetID == target {
			out = append(out, d)
		}
	}
	a.docs = nil
	return out
}

// reauth handles a 401/403 document of page: once per host the binding is
// applied again and the page reloaded; the next time ends the run.
func (a *Auth) reauth(ctx context.Context, page *browser.Page, hr *runner.HookResult) error {
	docs := a.takeDocs(page.TargetID())
	if len(docs) == 0 {
		return nil
	}
	d := docs[len(docs)-1]
	u, err := url.Parse(d.URL)
	if err != nil {
		return nil //nolint:nilerr // Chromium reported it; it parses
	}
	host := u.Hostname()
	b := a.match(host)
	if b == nil || b.Method.Kind() == KindFormLogin {
		return nil
	}
	a.mu.Lock()
	again := a.reauthed[host]
	a.reauthed[host] = true
	a.mu.Unlock()
	if again {
		return a.failRun(ctx, b, host, fmt.Sprintf("the site answered HTTP %d again after the credentials were applied anew", d.Status))
	}
	if err := a.reapply(ctx, page, b, host); err != nil {
		return a.failRun(ctx, b, host, fmt.Sprintf("re-applying after HTTP %d: %v", d.Status, err))
	}
	a.tell(ctx, Applied{Domain: host, Method: b.Method.Kind(), Credential: b.Credential, Reauth: true})
	a.takeDocs(page.TargetID()) // a callback's own navigations
	hr.Changed = true
	if err := page.Navigate(ctx, d.URL, a.opts.NavigationTimeout); err != nil {
		if errors.Is(err, browser.ErrBrowserGone) || ctx.Err() != nil {
			return err
		}
		hr.Notes = append(hr.Notes, fmt.Sprintf("auth: %s answered HTTP %d; the credentials were applied anew but reloading the page failed: %v", host, d.Status, err))
		return nil
	}
	for _, d2 := range a.takeDocs(page.TargetID()) {
		if u2, err := url.Parse(d2.URL); err == nil && u2.Hostname() == host {
			return a.failRun(ctx, b, host, fmt.Sprintf("the site answered HTTP %d again after the credentials were applied anew", d2.Status))
		}
	}
	hr.Notes = append(hr.Notes, fmt.Sprintf("auth: %s answered HTTP %d; the credentials were applied anew and the page reloaded", host, d.Status))
	return nil
}

// reapply applies b again for host on page.
func (a *Auth) reapply(ctx context.Context, page *browser.Page, b *binding, host string) error {
	switch m := b.Method.(type) {
	case *OAuth:
		return b.tokens.invalidate(ctx)
	case *Callback:
		return a.runCallback(ctx, page, b, host)
	case *Cookies:
		return page.StoreCookies(ctx, networkCookies(m, b.Domains))
	case *LocalStorage:
		_, err := page.StoreLocalStorage(ctx, m.Origin, m.Entries)
		return err
	}
	return nil // a fixed header: the reload sends it again
}

// runCallback runs a callback binding on page for host ("" for the global
// callback).
func (a *Auth) runCallback(ctx context.Context, page *browser.Page, b *binding, host string) error {
	cb := b.Method.(*Callback)
	if cb.Script != nil {
		return a.runScript(ctx, page, cb.Script)
	}
	return a.callWebhook(ctx, page, cb.Webhook, host)
}
