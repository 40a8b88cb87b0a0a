package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/launcher/flags"
	"github.com/go-rod/rod/lib/proto"
	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

const wantDashboardCSP = "default-src 'self'; img-src 'self' data:; script-src 'self'; style-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiWait bounds every wait for the page; it is a deadline for a broken
// dashboard, not a measure of speed.
const uiWait = 2 * time.Minute

// TestDashboardServing: the dashboard's files are served under /ui/ with
// the strict CSP, / leads to it, and nothing else of web/ is served.
func TestDashboardServing(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{role: config.RoleAPI})
	base := "http://" + ts.addrs.HTTP
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	for _, tc := range []struct {
		path     string
		status   int
		location string
		ctype    string
		contains string
	}{
		{path: "/", status: http.StatusFound, location: "/ui/"},
		{path: "/ui", status: http.StatusTemporaryRedirect, location: "/ui/"},
		{path: "/ui/", status: http.StatusOK, ctype: "text/html", contains: `<script type="module" src="app.js"></script>`},
		{path: "/ui/index.html", status: http.StatusOK, ctype: "text/html"},
		{path: "/ui/app.js", status: http.StatusOK, ctype: "javascript", contains: "hashchange"},
		{path: "/ui/app.css", status: http.StatusOK, ctype: "text/css"},
		{path: "/ui/web.go", status: http.StatusNotFound},
		{path: "/ui/nope/", status: http.StatusNotFound},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := noRedirect.Get(base + tc.path)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode, "%s", body)
			if tc.location != "" {
				require.Equal(t, tc.location, resp.Header.Get("Location"))
			}
			if tc.status == http.StatusOK {
				require.Equal(t, wantDashboardCSP, resp.Header.Get("Content-Security-Policy"))
				require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
				require.Contains(t, resp.Header.Get("Content-Type"), tc.ctype)
				require.Contains(t, string(body), tc.contains)
				require.NotEmpty(t, resp.Header.Get("ETag"))
			}
		})
	}

	// A browser that has the file revalidates it for free.
	resp, err := http.Get(base + "/ui/app.js")
	require.NoError(t, err)
	resp.Body.Close()
	req, err := http.NewRequest(http.MethodGet, base+"/ui/app.js", nil)
	require.NoError(t, err)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	again, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	again.Body.Close()
	require.Equal(t, http.StatusNotModified, again.StatusCode)
}

// TestDashboardLiveRun drives the dashboard in Chromium: a run created
// through the API appears in the open list, its detail page shows its steps
// as they happen (screenshot, reasoning, tool calls), then its end; text
// from the goal and the model is shown as text, never as markup.
func TestDashboardLiveRun(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	base := "http://" + ts.addrs.HTTP
	site := newSite(t)
	model := newGatedModel(t, func(turn int) llm.ToolCall {
		if turn == 1 {
			return llm.Call("browser_click", map[string]any{"target": map[string]any{"role": "button", "name": "Go"}, "confidence": 0.9})
		}
		return llm.Call("complete_task", map[string]any{"status": "success", "reason": "clicked Go"})
	})
	page := openDashboard(t, base+"/ui/")
	page.el(`#live[data-mode="live"]`) // following GET /v1/events:sse

	goal := `Click Go <script>window.__pwned = 1</script><img src="x" id="pwn" onerror="window.__pwned = 2">`
	p := modelRunParams(goal, site.URL+"/", model)
	p["completion"] = map[string]any{"failure": []map[string]any{{"name": "error page", "text_present": "Internal Server Error"}}}
	runID := createRunREST(t, base, p)
	logRunOnFailure(t, ts, runID)

	// The list shows the new run without a reload.
	row := page.el(`tr[data-run-id="` + runID + `"]`)
	require.Equal(t, goal, page.prop(row, `.goal`, "textContent"))

	// Its detail page, while the model has not answered yet.
	page.click(`tr[data-run-id="` + runID + `"] a.goal`)
	page.waitText(`section.run[data-run-id="`+runID+`"] .run-header h1.goal`, goal)
	require.False(t, page.has(`li.step:not(.in-progress)`), "no step is finished before the model answers")

	// Step 1 appears as it finishes: screenshot, reasoning, the click.
	model.release(1)
	page.el(`li.step[data-step="1"]:not(.in-progress)`)
	require.Equal(t, model.reasoning(1), page.text(`li.step[data-step="1"] .reasoning`))
	require.Equal(t, "ok", page.text(`li.step[data-step="1"] .action[data-tool="browser_click"] .outcome`))
	page.waitJS(`() => { const i = document.querySelector('li.step[data-step="1"] .thumb img'); return i && i.complete && i.naturalWidth > 0 }`)
	require.False(t, page.has(`li.step[data-step="2"]:not(.in-progress)`))
	page.shot("run-step1")

	// The screenshot opens in full.
	page.click(`li.step[data-step="1"] .thumb`)
	page.waitJS(`() => { const i = document.querySelector('dialog.viewer[open] img'); return i && i.complete && i.naturalWidth >= 800 }`)
	page.click(`dialog.viewer`)
	page.waitJS(`() => !document.querySelector('dialog.viewer[open]')`)

	// The model completes the task; the header follows.
	model.release(2)
	page.el(`.run-header .status[data-status="RUN_STATUS_COMPLETED"]`)
	page.el(`li.step[data-step="2"]:not(.in-progress) .action[data-tool="complete_task"]`)
	require.Contains(t, page.text(`.run-header .summary`), "clicked Go")
	require.Contains(t, page.text(`.run-header .final-verdict`), "done")
	require.Equal(t, "error page", page.text(`.run-header .criteria tr[data-matched="false"] td`))
	require.False(t, page.has(`.run-header button.cancel:not([hidden])`), "a finished run cannot be cancelled")
	page.shot("run-completed")

	// Its model calls.
	page.click(`nav.tabs a[data-tab="prompt-runs"]`)
	page.el(`article.prompt-run[data-role="judge"]`)
	require.Contains(t, page.text(`article.prompt-run[data-role="controller"] .model`), "test-model")
	page.el(`article.prompt-run[data-role="controller"] .media-strip img`)
	page.shot("prompt-runs")

	// Back in the list, the run is complete, with its final screenshot.
	page.click(`a.back`)
	page.el(`tr[data-run-id="` + runID + `"][data-status="RUN_STATUS_COMPLETED"]`)
	page.waitJS(`() => { const i = document.querySelector('tr[data-run-id="` + runID + `"] img.list-thumb'); return i && i.complete && i.naturalWidth > 0 }`)
	page.shot("runs")

	// The status filter.
	page.click(`.chips a[data-filter="RUN_STATUS_FAILED"]`)
	page.waitJS(`() => location.hash.includes('status=FAILED') && document.querySelector('.runs .empty:not([hidden])') !== null`)
	require.False(t, page.has(`tr[data-run-id="`+runID+`"]`))
	page.click(`.chips a[data-filter="all"]`)
	page.el(`tr[data-run-id="` + runID + `"]`)

	// The label filter.
	page.input(`.label-filter input`, "suite=other")
	page.click(`.label-filter button`)
	page.waitJS(`() => location.hash.includes('label=suite%3Dother') && document.querySelector('.runs .empty:not([hidden])') !== null`)
	require.False(t, page.has(`tr[data-run-id="`+runID+`"]`))
	page.input(`.label-filter input`, "suite=dashboard")
	page.click(`.label-filter button`)
	page.el(`tr[data-run-id="` + runID + `"]`)

	// Untrusted text stayed text: no element came from the goal or the
	// reasoning, no script ran.
	require.Equal(t, false, page.eval(`() => window.__pwned !== undefined || document.getElementById('pwn') !== null`))
	page.noErrors()
}

// TestDashboardApproval answers human checkpoints from the page: an
// approval lets the run go on to COMPLETED; a rejection's message reaches
// the model; a live run is cancelled with its button.
func TestDashboardApproval(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	base := "http://" + ts.addrs.HTTP
	site := newSite(t)
	askFirst := func(status string) func(int) llm.ToolCall {
		return func(turn int) llm.ToolCall {
			if turn == 1 {
				return llm.Call("request_human_approval", map[string]any{"action": "Press Go to place the order", "reason": "It spends <b>money</b>"})
			}
			return llm.Call("complete_task", map[string]any{"status": status, "reason": "order placed"})
		}
	}
	approveModel := newGatedModel(t, askFirst("success"))
	rejectModel := newGatedModel(t, askFirst("failed"))
	approveModel.release(1)
	approveModel.release(2)
	rejectModel.release(1)
	approveID := createRunREST(t, base, modelRunParams("Place the order", site.URL+"/", approveModel))
	rejectID := createRunREST(t, base, modelRunParams("Place another order", site.URL+"/", rejectModel))
	logRunOnFailure(t, ts, approveID)
	logRunOnFailure(t, ts, rejectID)

	// Approve: the request is shown with its screenshot; the run goes on.
	page := openDashboard(t, base+"/ui/#/runs/"+approveID)
	page.el(`.run-header .status[data-status="RUN_STATUS_AWAITING_APPROVAL"]`)
	page.el(`.approval[data-approval-id]`)
	require.Equal(t, "Press Go to place the order", page.text(`.approval .approval-action`))
	require.Equal(t, "It spends <b>money</b>", page.text(`.approval .approval-reason`))
	page.waitJS(`() => { const i = document.querySelector('.approval .thumb img'); return i && i.complete && i.naturalWidth > 0 }`)
	page.shot("approval")
	page.click(`.approval button.approve`)
	page.waitJS(`() => document.querySelector('.run-header .status[data-status="RUN_STATUS_COMPLETED"]') !== null ||
		document.querySelector('.approval .field-error:not([hidden])') !== null`)
	if !page.has(`.run-header .status[data-status="RUN_STATUS_COMPLETED"]`) {
		t.Fatalf("the approval was refused: %s", page.text(`.approval .field-error`))
	}
	require.False(t, page.has(`.approval`), "an answered request is no longer shown")
	page.el(`li.note-card[data-event="RUN_EVENT_TYPE_APPROVAL_ANSWERED"]`)

	// Reject: the message goes back to the model as the tool's answer.
	page.eval(`id => { location.hash = '#/runs/' + id }`, rejectID)
	page.el(`section.run[data-run-id="` + rejectID + `"] .approval[data-approval-id]`)
	page.input(`.approval textarea[name="message"]`, "Not today: the order is too big")
	page.click(`.approval button.reject`)
	call := rejectModel.waitCall(t, 2)
	var said strings.Builder
	for _, m := range call.Messages {
		for _, p := range m.Parts {
			said.WriteString(p.Text)
			if p.ToolResult != nil {
				said.WriteString(p.ToolResult.Content)
			}
		}
	}
	require.Contains(t, said.String(), "Not today: the order is too big")
	page.waitJS(`() => !document.querySelector('.approval')`)

	// Cancel the run while the model thinks.
	page.click(`.run-header button.cancel`)
	page.el(`.run-header .status[data-status="RUN_STATUS_CANCELLED"]`)
	page.noErrors()
}

// TestDashboardPollingFallback: against a server without the event stream
// (GET /v1/events:sse answered 404), the list polls and still shows new
// runs.
func TestDashboardPollingFallback(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{role: config.RoleAPI})
	base := "http://" + ts.addrs.HTTP
	page := newDashboardPage(t)
	router := page.p.HijackRequests()
	require.NoError(t, router.Add("*/v1/events:sse*", "", func(h *rod.Hijack) {
		h.Response.Payload().ResponseCode = http.StatusNotFound
		h.Response.SetHeader("Content-Type", "application/json").SetBody(`{"code": 5, "message": "Not Found"}`)
	}))
	go router.Run()
	t.Cleanup(func() { _ = router.Stop() })
	page.open(base + "/ui/")
	page.el(`#live[data-mode="polling"]`)

	runID := createRunREST(t, base, map[string]any{"goal": "Expect text Hello", "start_url": "https://example.com/"})
	page.el(`tr[data-run-id="` + runID + `"][data-status="RUN_STATUS_QUEUED"]`)
	page.noErrors()
}

// gatedModel is a fake OpenAI-compatible model whose controller turns are
// held until the test releases them, so the test can look at the page
// between steps. A turn is counted from the conversation (its assistant
// messages), so a retried call is the same turn. Its judge says done once
// the controller completed the task.
type gatedModel struct {
	*llmtest.Server
	mu       sync.Mutex
	gates    map[int]chan struct{}
	arrivals map[int]chan struct{}
	calls    map[int]llmtest.Call
	done     atomic.Bool
}

func newGatedModel(t *testing.T, call func(turn int) llm.ToolCall) *gatedModel {
	t.Helper()
	m := &gatedModel{gates: map[int]chan struct{}{}, arrivals: map[int]chan struct{}{}, calls: map[int]llmtest.Call{}}
	ctx, cancel := context.WithCancel(context.Background())
	m.Server = llmtest.NewOpenAI(t, func(c llmtest.Call) llmtest.Reply {
		usage := llm.Usage{InputTokens: 1500, OutputTokens: 60}
		if slices.Contains(c.Tools, "submit_verdict") {
			args, _ := json.Marshal(map[string]any{"done": m.done.Load(), "confidence": 0.9, "reason": "looked at the page", "feedback": ""})
			return llmtest.Reply{ToolCalls: []llm.ToolCall{{Name: "submit_verdict", Arguments: args}}, Usage: usage}
		}
		turn := 1
		for _, msg := range c.Messages {
			if msg.Role == llm.RoleAssistant {
				turn++
			}
		}
		m.arrive(turn, c)
		select {
		case <-m.gate(turn):
		case <-ctx.Done():
			return llmtest.Reply{Status: http.StatusServiceUnavailable}
		}
		tc := call(turn)
		if tc.Name == "complete_task" {
			m.done.Store(true)
		}
		return llmtest.Reply{Text: m.reasoning(turn), ToolCalls: []llm.ToolCall{tc}, Usage: usage}
	})
	t.Cleanup(cancel) // before the server's own cleanup, which waits for held calls
	return m
}

// chanFor returns the channel of turn in chans, made on first use.
func (m *gatedModel) chanFor(chans map[int]chan struct{}, turn int) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := chans[turn]
	if !ok {
		c = make(chan struct{})
		chans[turn] = c
	}
	return c
}

func (m *gatedModel) gate(turn int) chan struct{} { return m.chanFor(m.gates, turn) }

// arrive records the first call of a turn.
func (m *gatedModel) arrive(turn int, c llmtest.Call) {
	ch := m.chanFor(m.arrivals, turn)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.calls[turn]; !ok {
		m.calls[turn] = c
		close(ch)
	}
}

// waitCall waits until the model is asked for turn and returns the call.
func (m *gatedModel) waitCall(t *testing.T, turn int) llmtest.Call {
	t.Helper()
	select {
	case <-m.chanFor(m.arrivals, turn):
	case <-time.After(uiWait):
		t.Fatalf("the model was not asked for turn %d", turn)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[turn]
}

// release lets the model answer its turn.
func (m *gatedModel) release(turn int) { close(m.gate(turn)) }

// reasoning is the model's text in a turn: markup that must show as text.
func (m *gatedModel) reasoning(turn int) string {
	return "Turn " + string(rune('0'+turn)) + ": the page has a <b>Go</b> button & I act on it"
}

// logRunOnFailure logs the run and its steps when the test fails, to tell
// a dashboard defect from a run that went elsewhere.
func logRunOnFailure(t *testing.T, ts *testServer, runID string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		run, err := ts.client.GetRun(context.Background(), &wfv1.GetRunRequest{RunId: runID})
		if err != nil {
			t.Logf("run %s: %v", runID, err)
			return
		}
		t.Logf("run %s: %s %v %q criteria %v\n%s", runID, run.Status, run.Error, run.Summary, run.Criteria, describeSteps(t, ts.client, runID))
	})
}

// modelRunParams are REST run params for a run on the test site driven and
// judged by model.
func modelRunParams(goal, url string, model *gatedModel) map[string]any {
	settings := map[string]any{"provider": "openai", "model": "test-model", "base_url": model.URL}
	return map[string]any{
		"goal": goal, "start_url": url, "allowed_domains": []string{"127.0.0.1"},
		"labels":     map[string]string{"suite": "dashboard"},
		"controller": settings,
		"judge":      map[string]any{"strategy": "JUDGE_STRATEGY_LLM", "model": settings},
	}
}

// createRunREST creates a run over REST and returns its ID.
func createRunREST(t *testing.T, base string, params map[string]any) string {
	t.Helper()
	body, err := json.Marshal(params)
	require.NoError(t, err)
	var run struct {
		ID string `json:"id"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodPost, base+"/v1/runs", string(body), &run))
	require.NotEmpty(t, run.ID)
	return run.ID
}

// uiPage is the dashboard open in a headless Chromium.
type uiPage struct {
	t *testing.T
	p *rod.Page

	mu     sync.Mutex
	errors []string
}

// openDashboard opens url in a Chromium of the test's own.
func openDashboard(t *testing.T, url string) *uiPage {
	t.Helper()
	u := newDashboardPage(t)
	u.open(url)
	return u
}

// newDashboardPage starts a Chromium of the test's own (the system binary,
// no sandbox, no background networking; never a download) with a blank
// page. JS exceptions and CSP violations of the page are collected for
// noErrors.
func newDashboardPage(t *testing.T) *uiPage {
	t.Helper()
	bin, err := pool.FindChromium("")
	require.NoError(t, err)
	l := launcher.New().Bin(bin).Leakless(false).Headless(true).UserDataDir(t.TempDir()).
		Set(flags.NoSandbox).Set("disable-background-networking").Set("disable-component-update").
		Set("no-default-browser-check").Set("disable-gpu")
	controlURL, err := l.Launch()
	require.NoError(t, err)
	t.Cleanup(l.Kill)
	b := rod.New().ControlURL(controlURL)
	require.NoError(t, b.Connect())
	t.Cleanup(func() { _ = b.Close() })

	p, err := b.Page(proto.TargetCreateTarget{URL: "about:blank"})
	require.NoError(t, err)
	u := &uiPage{t: t, p: p}
	require.NoError(t, proto.LogEnable{}.Call(p))
	go p.EachEvent(func(e *proto.RuntimeExceptionThrown) {
		msg := "exception: " + e.ExceptionDetails.Text
		if ex := e.ExceptionDetails.Exception; ex != nil {
			msg += " " + ex.Description
		}
		u.addError(msg)
	}, func(e *proto.LogEntryAdded) {
		if e.Entry.Source == proto.LogLogEntrySourceSecurity {
			u.addError("security: " + e.Entry.Text)
		}
	})()
	t.Cleanup(func() {
		if t.Failed() {
			u.shot("failed-" + strings.ReplaceAll(t.Name(), "/", "-"))
		}
	})
	return u
}

// open navigates to url.
func (u *uiPage) open(url string) {
	u.t.Helper()
	require.NoError(u.t, u.p.Navigate(url))
	require.NoError(u.t, u.p.WaitLoad())
}

func (u *uiPage) addError(s string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.errors = append(u.errors, s)
}

// noErrors fails the test when the page threw or violated its CSP.
func (u *uiPage) noErrors() {
	u.t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	require.Empty(u.t, u.errors, "the page reported errors")
}

// el waits for an element.
func (u *uiPage) el(selector string) *rod.Element {
	u.t.Helper()
	el, err := u.p.Timeout(uiWait).Element(selector)
	require.NoError(u.t, err, "waiting for %s", selector)
	return el.CancelTimeout()
}

func (u *uiPage) has(selector string) bool {
	u.t.Helper()
	ok, _, err := u.p.Has(selector)
	require.NoError(u.t, err)
	return ok
}

// text is an element's text as shown.
func (u *uiPage) text(selector string) string {
	u.t.Helper()
	s, err := u.el(selector).Text()
	require.NoError(u.t, err)
	return strings.TrimSpace(s)
}

// prop reads a property of the element matching selector under el.
func (u *uiPage) prop(el *rod.Element, selector, name string) string {
	u.t.Helper()
	inner, err := el.Element(selector)
	require.NoError(u.t, err)
	v, err := inner.Property(name)
	require.NoError(u.t, err)
	return v.Str()
}

// input types text into an empty field.
func (u *uiPage) input(selector, text string) {
	u.t.Helper()
	el := u.el(selector)
	require.NoError(u.t, el.SelectAllText())
	require.NoError(u.t, el.Input(text))
}

// click clicks the element matching selector with the mouse. A live page
// may replace the element between finding and clicking it (a list row
// updated by an event): then it is found again.
func (u *uiPage) click(selector string) {
	u.t.Helper()
	var err error
	for range 3 {
		el := u.el(selector)
		if err = el.Click(proto.InputMouseButtonLeft, 1); err == nil {
			return
		}
		if connected, cerr := el.Eval(`() => this.isConnected`); cerr == nil && connected.Value.Bool() {
			break // there, and still not clickable
		}
	}
	require.NoError(u.t, err, "click %s", selector)
}

// waitText waits until the element's text is want.
func (u *uiPage) waitText(selector, want string) {
	u.t.Helper()
	err := u.p.Timeout(uiWait).Wait(rod.Eval(`(sel, want) => document.querySelector(sel)?.textContent === want`, selector, want))
	if err != nil {
		got, _ := u.p.Eval(`sel => document.querySelector(sel)?.textContent`, selector)
		u.t.Fatalf("waiting for %s to say %q: %v (it says %v)", selector, want, err, got.Value)
	}
}

// waitJS waits until the function js returns true.
func (u *uiPage) waitJS(js string, args ...any) {
	u.t.Helper()
	require.NoError(u.t, u.p.Timeout(uiWait).Wait(rod.Eval(js, args...)), "waiting for %s", js)
}

// shot saves a screenshot of the page as name.png into the directory
// WAYFINDER_TEST_SCREENSHOTS names, for looking at the dashboard; without
// it, nothing.
func (u *uiPage) shot(name string) {
	u.t.Helper()
	dir := os.Getenv("WAYFINDER_TEST_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := u.p.Screenshot(true, nil)
	require.NoError(u.t, err)
	require.NoError(u.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

func (u *uiPage) eval(js string, args ...any) any {
	u.t.Helper()
	res, err := u.p.Eval(js, args...)
	require.NoError(u.t, err)
	return res.Value.Val()
}

// TestDashboardAPIKey: on a server that requires keys the page asks for
// one, says so when it is refused, keeps it for the tab only, and shows
// screenshots it can only fetch with the key.
func TestDashboardAPIKey(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{adminKey: testAdminKey})
	site := newSite(t)
	ctx := as(context.Background(), testAdminKey)
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: params(site.URL + "/")})
	require.NoError(t, err)
	stream, err := ts.client.StreamRunEvents(ctx, &wfv1.StreamRunEventsRequest{RunId: run.Id})
	require.NoError(t, err)
	for {
		ev, err := stream.Recv()
		require.NoError(t, err)
		if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED {
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, ev.GetRun().GetStatus())
			break
		}
	}

	page := openDashboard(t, "http://"+ts.addrs.HTTP+"/ui/")
	page.el(`dialog#key-dialog[open]`)
	require.False(t, page.has(`tr[data-run-id]`))

	page.input(`#key-input`, "wf_not-a-key")
	page.click(`#key-form button[type="submit"]`)
	page.el(`dialog#key-dialog[open] #key-error:not([hidden])`)

	page.input(`#key-input`, testAdminKey)
	page.click(`#key-form button[type="submit"]`)
	page.el(`tr[data-run-id="` + run.Id + `"][data-status="RUN_STATUS_COMPLETED"]`)
	page.el(`#live[data-mode="live"]`) // the event stream took the key as access_token
	// An <img> cannot send the key: the screenshot arrives as a data: URL.
	page.waitJS(`() => { const i = document.querySelector('img.list-thumb'); return i && i.src.startsWith('data:image/') && i.complete && i.naturalWidth > 0 }`)
	require.Equal(t, testAdminKey, page.eval(`() => sessionStorage.getItem('wayfinder.apiKey')`))
	require.EqualValues(t, 0, page.eval(`() => localStorage.length`))

	page.click(`tr[data-run-id="` + run.Id + `"] a.goal`)
	page.waitJS(`() => { const i = document.querySelector('li.step[data-step="1"] .thumb img'); return i && i.src.startsWith('data:image/') && i.complete && i.naturalWidth > 0 }`)

	// Forgetting the key asks again.
	page.click(`#key-button`)
	page.el(`dialog#key-dialog[open]`)
	require.Nil(t, page.eval(`() => sessionStorage.getItem('wayfinder.apiKey')`))
	page.noErrors()
}
