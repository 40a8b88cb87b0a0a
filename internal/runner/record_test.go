package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/trace"
)

const profilePage = `<!doctype html><title>Profile</title>
<h1>Edit profile</h1>
<form action="/saved" method="get">
<p><label>First name <input name="first"></label></p>
<p><label>Last name <input name="last"></label></p>
<p><label><input type="checkbox" name="news"> Newsletter</label></p>
<button type="submit" id="save">Save</button> <button type="button">Cancel</button>
</form>`

const savedPage = `<!doctype html><title>Saved</title><h1>Profile saved</h1><p>Your profile was saved.</p>`

func checkTurn(t *testing.T, name string) llm.Turn {
	return answer("I check "+name+".", func(req *llm.Request) []llm.ToolCall {
		return []llm.ToolCall{on(t, req, ToolCheck, "checkbox", name, nil)}
	})
}

func profileParams(s *site, m llm.Model) Params {
	p := params(s, m)
	p.Goal = "Save the profile with first name Ada and the newsletter on"
	p.StartURL = s.URL + "/profile"
	return p
}

// lookAt opens url in a page of its own and returns a snapshot of it, as a
// replay would see the page.
func lookAt(t *testing.T, ctx context.Context, url string) (*browser.Page, *browser.Snapshot) {
	t.Helper()
	b := newLeasedBrowser(t, sharedPool(t))
	page, err := b.Session().NewPage(ctx, browser.PageOptions{Width: 640, Height: 400})
	require.NoError(t, err)
	require.NoError(t, page.Navigate(ctx, url, 20*time.Second))
	snap, err := page.Snapshot(ctx, browser.SnapshotOptions{})
	require.NoError(t, err)
	return page, snap
}

func TestCompletedRunRecordsTrace(t *testing.T) {
	t.Parallel()
	s := newSite(t, map[string]string{"/profile": profilePage, "/saved": savedPage})
	m := llm.NewScripted("controller",
		fillTurn(t, "First name", "Ada"),
		checkTurn(t, "Newsletter"),
		clickTurn(t, "button", "Save"),
		completeTurn("success", "the page says Profile saved"))
	ctx := runCtx(t)
	res, _ := execute(t, ctx, nil, profileParams(s, m))
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	tr := res.Trace
	require.NotNil(t, tr)
	require.Equal(t, trace.FormatVersion, tr.Format)
	require.Equal(t, s.URL+"/profile", tr.StartURL)
	require.Len(t, tr.Actions, 3)
	require.Equal(t, []string{ToolFill, ToolCheck, ToolClick}, []string{tr.Actions[0].Tool, tr.Actions[1].Tool, tr.Actions[2].Tool})
	require.Equal(t, "Ada", tr.Actions[0].Arguments["value"])
	require.NotContains(t, tr.Actions[0].Arguments, "reasoning")
	require.Contains(t, tr.Actions[2].URLAfter, s.URL+"/saved?first=Ada")
	require.Equal(t, s.URL+"/saved?first=Ada&last=&news=on", tr.Final.URL)
	require.NotNil(t, tr.Final.Verdict)
	require.True(t, tr.Final.Verdict.Done)
	require.Equal(t, "the page says Profile saved", tr.Final.Reason)
	require.Equal(t, trace.URLPattern(tr.Final.URL), tr.Final.Page.URLPattern)

	// Each target is found again, confidently, on the same page opened anew.
	page, snap := lookAt(t, ctx, s.URL+"/profile")
	sig := trace.PageSignature(snap)
	want := []struct{ role, name string }{{"textbox", "First name"}, {"checkbox", "Newsletter"}, {"button", "Save"}}
	for i, a := range tr.Actions {
		require.Equal(t, i+1, a.Step)
		require.Empty(t, a.TargetError, "action %d", i+1)
		require.NotNil(t, a.Target, "action %d", i+1)
		require.Equal(t, want[i].role, a.Target.Role, "action %d", i+1)
		require.Equal(t, want[i].name, a.Target.Name, "action %d", i+1)
		require.NotEmpty(t, a.Target.Tag, "action %d has its DOM details", i+1)
		require.Equal(t, s.URL+"/profile", a.URL)
		ok, _ := a.Page.Matches(sig)
		require.True(t, ok, "action %d's page signature matches the page", i+1)

		refs := trace.Shortlist(*a.Target, snap, 0)
		details, err := page.ElementDetails(ctx, refs...)
		require.NoError(t, err)
		r := trace.Match(*a.Target, snap, details)
		require.True(t, r.Confident, "action %d: %s", i+1, r.Reason)
		var got browser.Element
		for _, e := range snap.Elements {
			if e.Ref == r.Ref {
				got = e
			}
		}
		require.Equal(t, want[i].role, got.Role, "action %d: %s", i+1, r.Reason)
		require.Equal(t, want[i].name, got.Name, "action %d: %s", i+1, r.Reason)
	}
	require.Equal(t, "text", tr.Actions[0].Target.ValueKind)
	require.Equal(t, "toggle", tr.Actions[1].Target.ValueKind)
	require.Equal(t, "save", tr.Actions[2].Target.Attrs["id"])
}

func TestTraceKeepsSecretsAsPlaceholders(t *testing.T) {
	t.Parallel()
	ls := newLoginServer(t, nil)
	m := llm.NewScripted("controller",
		fillTurn(t, "Username", "{{username}}"),
		fillTurn(t, "Password", "{{password}}"),
		clickTurn(t, "button", "Sign in"),
		completeTurn("success", "signed in; the dashboard is shown"))
	p := Params{
		Goal:     "Sign in as alice with password " + testPassword + " and open the dashboard",
		StartURL: ls.URL + "/login", Policy: loopbackOnly{}, Controller: m,
		Page:    browser.PageOptions{Width: 640, Height: 400},
		Secrets: loginSecrets("127.0.0.1"),
	}
	res, _ := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Equal(t, testPassword, ls.received()[0].Get("password"), "the page got the real password")
	tr := res.Trace
	require.NotNil(t, tr)
	require.Len(t, tr.Actions, 3)
	require.Equal(t, "{{username}}", tr.Actions[0].Arguments["value"])
	require.Equal(t, "{{password}}", tr.Actions[1].Arguments["value"])
	if tr.Actions[1].TargetError == "" {
		// Known from the input's type, which the DOM details give (a read
		// that timed out on a loaded machine leaves only the snapshot's).
		require.Equal(t, "password", tr.Actions[1].Target.ValueKind)
	}
	require.Contains(t, tr.Goal, "{{password}}", "the goal keeps the placeholder")
	b, err := json.Marshal(tr)
	require.NoError(t, err)
	requireNoLeak(t, testPassword, "the trace", string(b))
	requireNoLeak(t, "alice", "the trace", string(b))
}

// replaceBefore replaces the element matching selector with a copy of
// itself before each action, so the node the snapshot named is gone when
// the action's target is captured (the action still finds its stand-in).
type replaceBefore string

func (r replaceBefore) BeforeAction(ctx context.Context, page *browser.Page, act *browser.Action) error {
	if act.Kind == browser.ActionNavigate {
		return nil
	}
	_, err := page.Truthy(ctx, `(() => { const e = document.querySelector(`+jsonString(string(r))+`); if (e) e.replaceWith(e.cloneNode(true)); return true; })()`)
	return err
}

func (replaceBefore) AfterAction(context.Context, *browser.Page, browser.Action, *browser.ActionResult) (HookResult, error) {
	return HookResult{}, nil
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestFailedCaptureStillRecordsAction(t *testing.T) {
	t.Parallel()
	s := newSite(t, map[string]string{"/profile": profilePage, "/saved": savedPage})
	m := llm.NewScripted("controller",
		clickTurn(t, "button", "Save"),
		completeTurn("success", "the page says Profile saved"))
	p := profileParams(s, m)
	p.Hooks = replaceBefore("#save")
	res, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Equal(t, "ok", sink.step(t, 1).Actions[1].Outcome, "the click found the button's stand-in")
	require.NotNil(t, res.Trace)
	require.Len(t, res.Trace.Actions, 1)
	a := res.Trace.Actions[0]
	require.Equal(t, ToolClick, a.Tool)
	require.Contains(t, a.TargetError, "no DOM details")
	require.NotNil(t, a.Target, "the snapshot's features are kept")
	require.Empty(t, a.Target.Tag)
	require.Equal(t, "Save", a.Target.Name)
	require.Contains(t, a.URLAfter, "/saved")
}

func TestFailedRunLeavesNoTrace(t *testing.T) {
	t.Parallel()
	s := newSite(t, map[string]string{"/profile": profilePage, "/saved": savedPage})
	m := llm.NewScripted("controller",
		fillTurn(t, "First name", "Ada"),
		completeTurn("failed", "the newsletter cannot be turned on"))
	res, _ := execute(t, runCtx(t), nil, profileParams(s, m))
	require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
	require.Nil(t, res.Trace)
}

func TestResumedRunLeavesNoTrace(t *testing.T) {
	t.Parallel()
	s := newSite(t, map[string]string{"/profile": profilePage, "/saved": savedPage})
	m := llm.NewScripted("controller",
		clickTurn(t, "button", "Save"),
		completeTurn("success", "the page says Profile saved"))
	p := profileParams(s, m)
	p.FirstStep, p.Resumed = 3, "Steps 1-2 were already taken."
	res, _ := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Nil(t, res.Trace)
}

// BenchmarkCaptureTarget measures what recording adds to an element
// action: the page signature, one ElementDetails call and the fingerprint,
// on the profile page in a real Chromium.
func BenchmarkCaptureTarget(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(profilePage))
	}))
	b.Cleanup(srv.Close)
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: b.TempDir(), HealthInterval: time.Hour})
	require.NoError(b, err)
	require.NoError(b, p.Start(context.Background()))
	b.Cleanup(p.Close)
	lease, err := p.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(b, err)
	b.Cleanup(lease.Release)
	ctx := context.Background()
	page, err := lease.Session().NewPage(ctx, browser.PageOptions{Width: 640, Height: 400})
	require.NoError(b, err)
	require.NoError(b, page.Navigate(ctx, srv.URL, 20*time.Second))
	snap, err := page.Snapshot(ctx, browser.SnapshotOptions{})
	require.NoError(b, err)
	var save string
	for _, e := range snap.Elements {
		if e.Name == "Save" {
			save = e.Ref
		}
	}
	ru := &run{page: page, acting: snap, step: 1}
	b.ResetTimer()
	for b.Loop() {
		ta := ru.captureTarget(ctx, browser.Action{Kind: browser.ActionClick, Ref: save})
		if ta.Target == nil || ta.TargetError != "" {
			b.Fatalf("capture failed: %s", ta.TargetError)
		}
	}
}
