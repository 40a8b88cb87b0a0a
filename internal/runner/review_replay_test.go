package runner

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/tools"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// withActions is a copy of tr whose actions are acts.
func withActions(tr *trace.Trace, acts []trace.Action) *trace.Trace {
	cp := *tr
	cp.Actions = acts
	return &cp
}

// cloneAction copies a with arguments of its own.
func cloneAction(a trace.Action) trace.Action {
	a.Arguments = maps.Clone(a.Arguments)
	return a
}

// A trace holding calls that are not browser actions (a custom tool,
// request_human_approval, complete_task, get_snapshot, a tool nobody
// knows) replays only its browser actions: the replay calls no custom
// tool, asks no human, claims nothing halfway.
func TestReplaySkipsCallsThatAreNotBrowserActions(t *testing.T) {
	t.Parallel()
	s, _, tr := recordProfile(t)
	hooks := newWebhooks(t)
	set, err := tools.NewSet([]tools.Definition{{Name: "lookup_order", Description: "Look up an order.",
		InputSchema: json.RawMessage(`{"type":"object"}`), Webhook: tools.Webhook{URL: hooks.URL + "/lookup"}}}, tools.Options{})
	require.NoError(t, err)

	acts := []trace.Action{tr.Actions[0],
		{Tool: "lookup_order", Arguments: map[string]any{"id": "A-1"}},
		{Tool: ToolApproval, Arguments: map[string]any{"action": "save", "reason": "to be sure"}},
		{Tool: ToolComplete, Arguments: map[string]any{"status": "success", "reason": "done early"}},
		{Tool: ToolGetSnapshot, Arguments: map[string]any{}},
		{Tool: "no_such_tool", Arguments: map[string]any{}},
	}
	acts = append(acts, tr.Actions[1:]...)
	sink := &humanSink{answer: func(context.Context, ApprovalRequest) (ApprovalAnswer, error) {
		return ApprovalAnswer{Approved: true}, nil
	}}
	p := profileParams(s, llm.NewScripted("controller"))
	p.Tools = set
	p.Replay = &Replay{Trace: withActions(tr, acts), Strict: true, PageWait: 2 * time.Second}
	res2 := runWith(t, p, sink)
	require.Equal(t, StatusCompleted, res2.Status, "%+v %s", res2.Err, res2.Replay.Divergence)
	require.Equal(t, 3, res2.Replay.Replayed)
	require.Empty(t, hooks.bodies("/lookup"), "a replay calls no custom tool")
	require.Empty(t, sink.asked(), "a replay asks no human for a recorded request_human_approval")
	require.Contains(t, res2.FinalURL, "first=Ada")
	require.Contains(t, res2.FinalURL, "news=on")
}

// A human who rejects a checkpoint on the replayed path stops the replay
// there: it is not asked again, and the recorded action on the rejected
// page is never taken.
func TestReplayCheckpointRejectionDiverges(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	rec := llm.NewScripted("controller",
		clickTurn(t, "link", "Checkout"),
		clickTurn(t, "button", "Pay now"),
		completeTurn("success", "the order was placed: the page thanks us"))
	res := runWith(t, shopParams(s, rec), &recordingSink{})
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.NotNil(t, res.Trace)
	require.Len(t, res.Trace.Actions, 2)
	paid := s.hit("POST /paid")

	// The second answer would approve: the human must not be asked again.
	sink := &humanSink{answer: answers(ApprovalAnswer{Message: "not today"}, ApprovalAnswer{Approved: true})}
	p := shopParams(s, llm.NewScripted("controller"), Checkpoint{Name: "payment", URL: regexp.MustCompile(`/pay$`)})
	p.Replay = &Replay{Trace: res.Trace, Strict: true, PageWait: 2 * time.Second}
	again := runWith(t, p, sink)
	require.Equal(t, StatusError, again.Status)
	require.Equal(t, CategoryReplayDiverged, again.Err.Category)
	require.Len(t, sink.asked(), 1, "the human who rejected is not asked again by the replay")
	require.Equal(t, paid, s.hit("POST /paid"), "the rejected page's button was not pressed")
	require.Contains(t, again.Replay.Divergence, "payment")
}

// A trace whose argument holds, literally, a value that is a secret of
// this run is replayed as a model's call with that value would be: the
// value stands for its placeholder, which is typed only on the secret's
// domains.
func TestReplayLiteralSecretKeepsItsDomains(t *testing.T) {
	t.Parallel()
	s, _, tr := recordProfile(t)
	const value = "Ada-Lovelace-7731"
	acts := []trace.Action{cloneAction(tr.Actions[0]), tr.Actions[1], tr.Actions[2]}
	acts[0].Arguments["value"] = value
	saved := s.hit("GET /saved")

	p := profileParams(s, llm.NewScripted("controller"))
	p.Secrets = []Secret{{Name: "token", Value: value, Domains: []string{"example.com"}}}
	p.Replay = &Replay{Trace: withActions(tr, acts), Strict: true, PageWait: 2 * time.Second}
	res, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusError, res.Status, "the secret may not be typed on 127.0.0.1")
	require.Equal(t, CategoryReplayDiverged, res.Err.Category)
	require.Contains(t, res.Replay.Divergence, CodeSecretNotAllowed)
	require.Equal(t, saved, s.hit("GET /saved"), "the form was not sent")
	requireNoLeak(t, value, "the divergence", res.Replay.Divergence)
	for _, st := range sink.steps() {
		requireNoLeak(t, value, "the step record", jsonText(t, st))
	}
}

// The divergence names what the trace expected; a value of it that is a
// secret of this run is redacted there as everywhere else.
func TestReplayDivergenceIsRedacted(t *testing.T) {
	t.Parallel()
	s, _, tr := recordProfile(t)
	const secret = "quux-secret-9931"
	acts := []trace.Action{tr.Actions[0], tr.Actions[1], cloneAction(tr.Actions[2])}
	acts[2].Page.URLPattern = "http://" + secret + ".test/profile"

	for _, strict := range []bool{true, false} {
		p := profileParams(s, llm.NewScripted("controller", completeTurn("failed", "cannot")))
		p.Redact = []string{secret}
		p.Replay = &Replay{Trace: withActions(tr, acts), Strict: strict, PageWait: 300 * time.Millisecond}
		res, _ := execute(t, runCtx(t), nil, p)
		require.NotNil(t, res.Replay)
		require.Equal(t, 3, res.Replay.DivergedAt, res.Replay.Divergence)
		require.Contains(t, res.Replay.Divergence, "expects the page")
		requireNoLeak(t, secret, "the divergence", res.Replay.Divergence)
		if res.Err != nil {
			requireNoLeak(t, secret, "the error", res.Err.Message)
		}
	}
}

// The rest of a long recorded path is told to the model within bounds.
func TestReplayHealNoteIsBounded(t *testing.T) {
	t.Parallel()
	s, _, tr := recordProfile(t)
	// The first action expects a page the browser never shows; 2000 more
	// follow it.
	first := cloneAction(tr.Actions[0])
	first.Page.URLPattern = "http://elsewhere.test/profile"
	acts := []trace.Action{first}
	for range 2000 {
		acts = append(acts, tr.Actions[1])
	}
	m := llm.NewScripted("controller", completeTurn("failed", "cannot"))
	p := profileParams(s, m)
	p.Replay = &Replay{Trace: withActions(tr, acts), PageWait: 300 * time.Millisecond}
	res, _ := execute(t, runCtx(t), nil, p)
	require.True(t, res.Replay.Healed)
	text := requestText(m.Requests()[0])
	require.Contains(t, text, "The recorded path went on with these actions")
	require.Less(t, strings.Count(text, "browser_check"), 100, "the note lists a bounded number of the remaining actions")
}

// An element action the model aimed by a description that named no single
// element has no fingerprint: the replay cannot tell which element it was
// and leaves the path rather than act on whichever the description finds
// first.
func TestReplayUnfingerprintedDescriptionDiverges(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	row := func(who string) string {
		return `<li>` + who + ` <form action="/deleted" method="get"><input type="hidden" name="u" value="` + who + `"><button>Delete</button></form></li>`
	}
	ps := &pages{m: map[string]string{"/users": `<!doctype html><title>Users</title><h1>Users</h1><ul>` + row("alice") + row("bob") + `</ul>`,
		"/deleted": `<!doctype html><title>Deleted</title><h1>User deleted</h1>`}}
	ps.serve(s, "/users")
	var mu sync.Mutex
	var deleted []string
	s.mux.HandleFunc("/deleted", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deleted = append(deleted, r.URL.Query().Get("u"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Deleted</title><h1>User deleted</h1>`))
	})
	rec := llm.NewScripted("controller",
		llm.Reply("delete alice", llm.Call(ToolClick, map[string]any{"target": map[string]any{"role": "button", "name": "Delete"}})),
		completeTurn("success", "the page says User deleted"))
	p := params(s, rec)
	p.Goal, p.StartURL = "Delete the user alice", s.URL+"/users"
	res, _ := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Len(t, res.Trace.Actions, 1)
	require.Nil(t, res.Trace.Actions[0].Target, "two buttons are named Delete")
	require.Equal(t, []string{"alice"}, deleted)

	// Bob's row now comes first.
	ps.set("/users", `<!doctype html><title>Users</title><h1>Users</h1><ul>`+row("bob")+row("alice")+`</ul>`)
	p.Controller = llm.NewScripted("controller")
	p.Replay = &Replay{Trace: res.Trace, Strict: true, PageWait: 2 * time.Second}
	again, _ := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusError, again.Status)
	require.Equal(t, CategoryReplayDiverged, again.Err.Category)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"alice"}, deleted, "the replay deleted nobody")
}

// An action the replay took that failed is not counted as replayed: the
// model took it over.
func TestReplayFailedActionIsNotCountedReplayed(t *testing.T) {
	t.Parallel()
	s, ps, tr := recordProfile(t)
	// The Save button moved (relocated by its id) and is disabled.
	ps.set("/profile", strings.Replace(profilePage, `<button type="submit" id="save">Save</button> <button type="button">Cancel</button>`,
		`<button type="button">Cancel</button> <button type="submit" id="save" disabled>Save</button>`, 1))
	m := llm.NewScripted("controller", completeTurn("failed", "the Save button is disabled"))
	p := profileParams(s, m)
	p.Replay = &Replay{Trace: tr, PageWait: 2 * time.Second}
	res, _ := execute(t, runCtx(t), nil, p)
	require.True(t, res.Replay.Healed, res.Replay.Divergence)
	require.Contains(t, res.Replay.Divergence, "action 3 (browser_click) failed")
	require.Equal(t, 2, res.Replay.Replayed, "the failed click is the model's to take again")
	require.Zero(t, res.Replay.Relocated)
	require.Equal(t, 3, res.Replay.DivergedAt, "the step of the failed action, not the one after")
	text := requestText(m.Requests()[0])
	require.Contains(t, text, "The recorded path went on with these actions")
	require.Contains(t, text, `1. browser_click button "Save"`, "the failed action is the first the model is told to take")

	// Strict: the run ends naming the step of the failed action.
	p = profileParams(s, llm.NewScripted("controller"))
	p.Replay = &Replay{Trace: tr, Strict: true, PageWait: 2 * time.Second}
	res, _ = execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusError, res.Status)
	require.Equal(t, 3, res.Replay.DivergedAt)
	require.Equal(t, 3, res.Err.Step)
	require.Contains(t, res.Err.Message, "diverged from its trace at step 3: action 3 (browser_click) failed")
}

// When the replay leaves the path because the page did not come, the model
// is shown the page as it is now, not only the older snapshot it has in
// its history (whose refs no longer hold).
func TestReplayHealShowsTheCurrentPage(t *testing.T) {
	t.Parallel()
	s, ps, tr := recordProfile(t)
	ps.set("/profile", `<!doctype html><title>Loading</title><p>Loading your profile</p>
<script>setTimeout(() => { document.title = "Zeta"; document.body.innerHTML = '<h1>Zeta page</h1><a href="/saved">Zeta link</a>'; }, 1500)</script>`)
	m := llm.NewScripted("controller", completeTurn("failed", "cannot"))
	p := profileParams(s, m)
	p.Replay = &Replay{Trace: tr, PageWait: 4 * time.Second}
	res, _ := execute(t, runCtx(t), nil, p)
	require.True(t, res.Replay.Healed)
	require.Equal(t, 1, res.Replay.DivergedAt)
	require.Contains(t, requestText(m.Requests()[0]), "Zeta link", "the page the model takes over on")
}
