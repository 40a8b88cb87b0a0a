package runner

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// pages serves pages a test can change between runs, on one site (a
// trace's pages are recognised by their host, so a replay must run on the
// site it was recorded on).
type pages struct {
	mu sync.Mutex
	m  map[string]string
}

func (p *pages) set(path, body string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[path] = body
}

func (p *pages) serve(s *site, paths ...string) {
	for _, path := range paths {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			p.mu.Lock()
			body := p.m[path]
			p.mu.Unlock()
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(body))
		})
	}
}

// recordProfile records the profile task on a site whose pages the test
// then changes: the trace fills the first name, checks the newsletter and
// clicks Save.
func recordProfile(t *testing.T) (*site, *pages, *trace.Trace) {
	t.Helper()
	s := newSite(t, nil)
	ps := &pages{m: map[string]string{"/profile": profilePage, "/saved": savedPage}}
	ps.serve(s, "/profile", "/profile2", "/saved")
	m := llm.NewScripted("controller",
		fillTurn(t, "First name", "Ada"),
		checkTurn(t, "Newsletter"),
		clickTurn(t, "button", "Save"),
		completeTurn("success", "the page says Profile saved"))
	res, _ := execute(t, runCtx(t), nil, profileParams(s, m))
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.NotNil(t, res.Trace)
	require.Len(t, res.Trace.Actions, 3)
	require.Equal(t, 4, res.Trace.Model.Calls, "the recording run's controller calls")
	return s, ps, res.Trace
}

// controllerCalls counts the run's controller prompt runs.
func controllerCalls(sink *recordingSink) int {
	n := 0
	for _, pr := range sink.promptRuns() {
		if pr.Role == RoleController {
			n++
		}
	}
	return n
}

func actors(sink *recordingSink) []string {
	var out []string
	for _, st := range sink.steps() {
		out = append(out, st.Actor)
	}
	return out
}

func TestReplay(t *testing.T) {
	t.Parallel()
	s, ps, tr := recordProfile(t)

	// The profile page as it may change: the Save button moved above the
	// fields inside a toolbar, the rest reordered.
	moved := `<!doctype html><title>Profile</title>
<h1>Edit profile</h1>
<form action="/saved" method="get">
<div role="toolbar"><button type="button">Cancel</button> <button type="submit" id="save">Save</button></div>
<p><label><input type="checkbox" name="news"> Newsletter</label></p>
<p><label>Last name <input name="last"></label></p>
<p><label>First name <input name="first"></label></p>
</form>`
	// The Save button renamed and stripped of its id: nothing identifies
	// it with confidence any more.
	renamed := strings.Replace(profilePage, `<button type="submit" id="save">Save</button>`, `<button type="submit">Store</button> <button type="reset">Reset</button>`, 1)
	// A notice before the profile page: the start URL shows it first.
	interstitial := `<!doctype html><title>What's new</title><h1>What's new</h1>
<p>Profiles now have a newsletter switch.</p><a href="/profile2">Continue to your profile</a>`

	tests := []struct {
		name  string
		setup func()
		// model answers after the divergence; nil for a run without one.
		model  func(t *testing.T) []llm.Turn
		strict bool
		// Checks.
		status         Status
		replayed       int
		relocated      bool
		divergedAt     int
		divergence     string
		healed         bool
		actors         []string
		controllerUsed int
	}{
		{
			name:     "unchanged page",
			setup:    func() {},
			status:   StatusCompleted,
			replayed: 3, actors: []string{ActorReplay, ActorReplay, ActorReplay, ActorReplay},
		},
		{
			name:     "moved element",
			setup:    func() { ps.set("/profile", moved) },
			status:   StatusCompleted,
			replayed: 3, relocated: true, actors: []string{ActorReplay, ActorReplay, ActorReplay, ActorReplay},
		},
		{
			name:  "renamed button heals through the model",
			setup: func() { ps.set("/profile", renamed) },
			model: func(t *testing.T) []llm.Turn {
				return []llm.Turn{clickTurn(t, "button", "Store"), completeTurn("success", "the page says Profile saved")}
			},
			status: StatusCompleted, replayed: 2, divergedAt: 3, divergence: `action 3 (browser_click button "Save")`, healed: true,
			actors: []string{ActorReplay, ActorReplay, "model", "model"}, controllerUsed: 2,
		},
		{
			name: "interstitial page heals through the model",
			setup: func() {
				ps.set("/profile", interstitial)
				ps.set("/profile2", profilePage)
			},
			model: func(t *testing.T) []llm.Turn {
				return []llm.Turn{clickTurn(t, "link", "Continue to your profile"),
					fillTurn(t, "First name", "Ada"), checkTurn(t, "Newsletter"), clickTurn(t, "button", "Save"),
					completeTurn("success", "the page says Profile saved")}
			},
			status: StatusCompleted, divergedAt: 1, divergence: "expects the page", healed: true,
			actors: []string{"model", "model", "model", "model", "model"}, controllerUsed: 5,
		},
		{
			name:   "strict replay fails cleanly on divergence",
			setup:  func() { ps.set("/profile", renamed) },
			strict: true,
			status: StatusError, replayed: 2, divergedAt: 3, divergence: `action 3 (browser_click button "Save")`,
			actors: []string{ActorReplay, ActorReplay, ActorReplay},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Subtests share the site: they run in order.
			ps.set("/profile", profilePage)
			tc.setup()
			var turns []llm.Turn
			if tc.model != nil {
				turns = tc.model(t)
			}
			m := llm.NewScripted("controller", turns...)
			p := profileParams(s, m)
			p.Replay = &Replay{Trace: tr, Strict: tc.strict, PageWait: 2 * time.Second}
			res, sink := execute(t, runCtx(t), nil, p)
			require.Equal(t, tc.status, res.Status, "%+v", res.Err)
			require.NotNil(t, res.Replay)
			r := res.Replay
			require.Equal(t, tc.replayed, r.Replayed)
			require.Equal(t, tc.relocated, r.Relocated > 0, "relocated %d", r.Relocated)
			require.Equal(t, tc.divergedAt, r.DivergedAt, r.Divergence)
			if tc.divergence != "" {
				require.Contains(t, r.Divergence, tc.divergence)
			} else {
				require.Empty(t, r.Divergence)
			}
			require.Equal(t, tc.healed, r.Healed)
			require.Equal(t, tc.actors, actors(sink))
			require.Equal(t, tc.controllerUsed, controllerCalls(sink), "controller calls")
			require.Equal(t, tc.controllerUsed, r.Controller.Calls)
			require.Len(t, m.Requests(), tc.controllerUsed)

			switch {
			case tc.status == StatusCompleted:
				require.NotNil(t, res.Trace, "the run records its own trace")
				require.Equal(t, tr.Model, res.Trace.Model, "a replay's trace keeps the model-driven cost of its path")
				require.Contains(t, res.FinalURL, "/saved?")
				require.Contains(t, res.FinalURL, "first=Ada")
				require.Contains(t, res.FinalURL, "news=on")
			case tc.strict:
				require.NotNil(t, res.Err)
				require.Equal(t, CategoryReplayDiverged, res.Err.Category)
				require.Contains(t, res.Err.Message, "diverged from its trace at step 3")
				require.Nil(t, res.Trace)
			}
			if tc.healed {
				first := m.Requests()[0]
				text := requestText(first)
				require.Contains(t, text, "left the path")
				if tc.replayed < len(tr.Actions) {
					require.Contains(t, text, "The recorded path went on with these actions")
					require.Contains(t, text, `browser_click button "Save"`)
				}
			}
		})
	}
}

// A replay fills secrets from their placeholders as a model's call would;
// neither the trace nor the record holds their values.
func TestReplayFillsSecrets(t *testing.T) {
	t.Parallel()
	ls := newLoginServer(t, nil)
	rec := llm.NewScripted("controller",
		fillTurn(t, "Username", "{{username}}"),
		fillTurn(t, "Password", "{{password}}"),
		clickTurn(t, "button", "Sign in"),
		completeTurn("success", "signed in; the dashboard is shown"))
	p := Params{
		Goal:     "Sign in and open the dashboard",
		StartURL: ls.URL + "/login", Policy: loopbackOnly{}, Controller: rec,
		Page:    browser.PageOptions{Width: 640, Height: 400},
		Secrets: loginSecrets("127.0.0.1"),
	}
	res, _ := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.NotNil(t, res.Trace)

	p.Controller = llm.NewScripted("controller")
	p.Replay = &Replay{Trace: res.Trace, Strict: true}
	again, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, again.Status, "%+v", again.Err)
	require.Equal(t, 3, again.Replay.Replayed)
	require.Zero(t, controllerCalls(sink))
	got := ls.received()
	require.Len(t, got, 2)
	require.Equal(t, testPassword, got[1].Get("password"), "the replay typed the real password")
	for _, st := range sink.steps() {
		for _, a := range st.Actions {
			requireNoLeak(t, testPassword, "a replayed step's arguments", shortArgs(a.Arguments))
		}
	}
	require.Equal(t, "{{password}}", again.Trace.Actions[1].Arguments["value"])
}

// An action the model aimed by role and name (not by ref) is fingerprinted
// as the one element the description names, and replayed by its
// fingerprint: the renamed-but-identified button is still found.
func TestReplayDescribedTargets(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	ps := &pages{m: map[string]string{"/profile": profilePage, "/saved": savedPage}}
	ps.serve(s, "/profile", "/saved")
	described := func(tool string, target map[string]any, extra map[string]any) llm.Turn {
		args := map[string]any{"target": target}
		for k, v := range extra {
			args[k] = v
		}
		return answer("by description", func(*llm.Request) []llm.ToolCall { return []llm.ToolCall{llm.Call(tool, args)} })
	}
	rec := llm.NewScripted("controller",
		described(ToolFill, map[string]any{"name": "First name"}, map[string]any{"value": "Ada"}),
		described(ToolClick, map[string]any{"role": "button", "name": "Save"}, nil),
		completeTurn("success", "the page says Profile saved"))
	res, _ := execute(t, runCtx(t), nil, profileParams(s, rec))
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Len(t, res.Trace.Actions, 2)
	for _, a := range res.Trace.Actions {
		require.NotNil(t, a.Target, "%s: %s", a.Tool, a.TargetError)
	}
	require.Equal(t, "save", res.Trace.Actions[1].Target.Attrs["id"])

	// The button is renamed but keeps its id: the description would no
	// longer find it, the fingerprint does.
	ps.set("/profile", strings.Replace(profilePage, `id="save">Save<`, `id="save">Store<`, 1))
	p := profileParams(s, llm.NewScripted("controller"))
	p.Replay = &Replay{Trace: res.Trace, Strict: true}
	again, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, again.Status, "%+v", again.Err)
	require.Equal(t, 2, again.Replay.Replayed)
	require.Zero(t, controllerCalls(sink))
	require.Contains(t, again.FinalURL, "first=Ada")
}
