package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/pool/pooltest"
)

// shared is the Chromium pool the tests share, started by the first test
// that needs it and closed by TestMain.
var shared = pooltest.New("runner", 8)

// TestMain closes the shared pool and fails the package when a test leaves
// a goroutine behind.
func TestMain(m *testing.M) { pooltest.Main(m, shared, true) }

// sharedPool returns the shared pool.
func sharedPool(t *testing.T) *pool.Pool { return shared.Pool(t) }

// ownPool is a pool of one Chromium process for t alone, for tests that
// kill it.
func ownPool(t *testing.T) (*pool.Pool, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: dir, HealthInterval: time.Hour, MemoryLimit: -1})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	t.Cleanup(p.Close)
	return p, dir
}

// leasedBrowser is a runner.Browser over pool leases: Renew releases the
// dead lease and takes a new one.
type leasedBrowser struct {
	pool *pool.Pool

	mu       sync.Mutex
	lease    *pool.Lease
	renewals int
}

func newLeasedBrowser(t *testing.T, p *pool.Pool) *leasedBrowser {
	t.Helper()
	lease, err := p.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(t, err)
	b := &leasedBrowser{pool: p, lease: lease}
	t.Cleanup(func() { b.current().Release() })
	return b
}

func (b *leasedBrowser) current() *pool.Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lease
}

func (b *leasedBrowser) Session() *browser.Session { return b.current().Session() }

func (b *leasedBrowser) Done() <-chan struct{} { return b.current().Done() }

func (b *leasedBrowser) Renew(ctx context.Context) (*browser.Session, error) {
	b.current().Release()
	lease, err := b.pool.Lease(ctx, browser.SessionOptions{})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lease = lease
	b.renewals++
	return lease.Session(), nil
}

func (b *leasedBrowser) renewed() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.renewals
}

// crash kills the Chromium process of b's lease (its whole process group,
// as a crash or the OOM killer would) and waits until the lease has ended.
// b must come from a pool of its own, made by ownPool with workDir.
func (b *leasedBrowser) crash(t *testing.T, workDir string) {
	t.Helper()
	lease := b.current()
	killed := 0
	for _, pid := range chromiumMains(workDir) {
		if syscall.Kill(-pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	require.NotZero(t, killed, "no Chromium found under %s", workDir)
	select {
	case <-lease.Done():
	case <-time.After(time.Minute):
		t.Fatal("the lease did not end after its browser was killed")
	}
	require.ErrorIs(t, lease.Err(), browser.ErrBrowserGone)
}

// chromiumMains lists the Chromium processes this test process started
// with a user-data dir under workDir.
func chromiumMains(workDir string) []int {
	var pids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		stat, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		end := strings.LastIndexByte(string(stat), ')')
		fields := strings.Fields(string(stat[end+1:]))
		if len(fields) < 2 || fields[0] == "Z" || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), workDir) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// loopbackOnly is the runs' navigation policy: 127.0.0.1 only.
type loopbackOnly struct{}

func (loopbackOnly) Check(_ context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	if u.Hostname() != "127.0.0.1" {
		return fmt.Errorf("%s is not an allowed domain", u.Hostname())
	}
	return nil
}

// recordingSink records what a run reports. It is safe for concurrent use.
type recordingSink struct {
	// onEvent, when set, sees each event as it is reported.
	onEvent func(Event)

	mu       sync.Mutex
	started  []int
	finished []Step
	prompts  []PromptRun
	events   []Event
}

func (s *recordingSink) StepStarted(_ context.Context, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = append(s.started, n)
	return nil
}

func (s *recordingSink) StepFinished(_ context.Context, st Step) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = append(s.finished, st)
	return nil
}

func (s *recordingSink) PromptRun(_ context.Context, pr PromptRun) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompts = append(s.prompts, pr)
	return nil
}

func (s *recordingSink) Event(_ context.Context, e Event) error {
	if s.onEvent != nil {
		s.onEvent(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	return nil
}

func (s *recordingSink) steps() []Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Step(nil), s.finished...)
}

func (s *recordingSink) promptRuns() []PromptRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]PromptRun(nil), s.prompts...)
}

func (s *recordingSink) allEvents() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

func (s *recordingSink) startedSteps() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.started...)
}

// step returns the finished step n.
func (s *recordingSink) step(t *testing.T, n int) Step {
	t.Helper()
	for _, st := range s.steps() {
		if st.Number == n {
			return st
		}
	}
	t.Fatalf("step %d was not recorded", n)
	return Step{}
}

// site is a small web site on 127.0.0.1: a login form in front of a
// dashboard, and whatever pages a test adds.
type site struct {
	URL string
	mux *http.ServeMux

	mu   sync.Mutex
	hits map[string]int
}

const loginPage = `<!doctype html><title>Sign in</title>
<h1>Sign in</h1>
<form method="post" action="/session">
<label>Username <input name="username"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button>
</form>
<p><a href="/help">Help</a></p>`

const dashboardPage = `<!doctype html><title>Dashboard</title>
<h1>Welcome, alice</h1><p>You are signed in.</p><button>Sign out</button>`

func newSite(t *testing.T, pages map[string]string) *site {
	t.Helper()
	s := &site{mux: http.NewServeMux(), hits: map[string]int{}}
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(body))
		}
	}
	s.mux.HandleFunc("/login", html(loginPage))
	s.mux.HandleFunc("/dashboard", html(dashboardPage))
	s.mux.HandleFunc("/help", html(`<!doctype html><title>Help</title><h1>Help</h1><a href="/login">Back to sign in</a>`))
	s.mux.HandleFunc("POST /session", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("username") == "alice" && r.FormValue("password") == "s3cret" {
			http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
			return
		}
		html(strings.Replace(loginPage, "<h1>Sign in</h1>", "<h1>Sign in</h1><p>Wrong username or password</p>", 1))(w, r)
	})
	s.mux.HandleFunc("/favicon.ico", http.NotFound)
	for path, body := range pages {
		s.mux.HandleFunc(path, html(body))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.Method+" "+r.URL.Path]++
		s.mu.Unlock()
		s.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// hit counts the requests for "METHOD /path".
func (s *site) hit(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[key]
}

// fastRetry retries model errors without waiting long.
var fastRetry = &llm.RetryPolicy{Initial: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 3, AttemptTimeout: time.Minute}

// params returns the parameters of a run of model on s's login page.
func params(s *site, model llm.Model) Params {
	return Params{
		Goal:              "Sign in as alice with password s3cret and open the dashboard",
		StartURL:          s.URL + "/login",
		Policy:            loopbackOnly{},
		Controller:        model,
		NavigationTimeout: 20 * time.Second,
		// A small viewport: the set-of-marks screenshot is drawn in Go,
		// which the race detector makes slow.
		Page: browser.PageOptions{Width: 640, Height: 400},
	}
}

// runCtx is a test's generous deadline: a run that should end promptly
// and does not fails the test instead of hanging it.
func runCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// execute runs p on a browser from the shared pool and checks the record's
// invariants.
func execute(t *testing.T, ctx context.Context, r *Runner, p Params) (Result, *recordingSink) {
	t.Helper()
	return executeOn(t, ctx, r, newLeasedBrowser(t, sharedPool(t)), p, &recordingSink{})
}

func executeOn(t *testing.T, ctx context.Context, r *Runner, b Browser, p Params, sink *recordingSink) (Result, *recordingSink) {
	t.Helper()
	if r == nil {
		r = &Runner{Retry: fastRetry}
	}
	res, err := r.Run(ctx, b, p, sink)
	require.NoError(t, err)
	checkRecord(t, p, res, sink)
	if s, ok := p.Controller.(*llm.Scripted); ok {
		checkPairing(t, s.Requests())
	}
	return res, sink
}

// checkRecord checks what every run's record must satisfy: each step
// started and finished once, in order, up to the result's last step; each
// tool call event has its result.
func checkRecord(t *testing.T, p Params, res Result, sink *recordingSink) {
	t.Helper()
	first := max(p.FirstStep, 1)
	var want []int
	for n := first; n <= res.Steps; n++ {
		want = append(want, n)
	}
	require.Equal(t, want, sink.startedSteps(), "steps started")
	var finished []int
	for _, st := range sink.steps() {
		finished = append(finished, st.Number)
		require.False(t, st.End.Before(st.Start), "step %d ends before it starts", st.Number)
	}
	require.Equal(t, want, finished, "steps finished")
	called, answered := map[int]int{}, map[int]int{}
	for _, e := range sink.allEvents() {
		require.Contains(t, want, e.Step, "event %+v of an unknown step", e)
		switch e.Kind {
		case EventToolCalled:
			called[e.Step]++
		case EventToolResult:
			answered[e.Step]++
		}
	}
	for n, c := range called {
		require.GreaterOrEqual(t, answered[n], c, "step %d: tool calls without a result event", n)
	}
	for _, pr := range sink.promptRuns() {
		require.Contains(t, want, pr.Step, "prompt run of an unknown step")
		require.NotNil(t, pr.Request)
		require.False(t, pr.End.Before(pr.Start))
		require.Equal(t, pr.Err == "", pr.Response != nil, "a prompt run has a response or an error")
	}
}

// checkPairing checks that every tool call in every request has exactly one
// result, in the user message right after it, as the vendors require.
func checkPairing(t *testing.T, reqs []*llm.Request) {
	t.Helper()
	for i, req := range reqs {
		for j, m := range req.Messages {
			if m.Role != llm.RoleAssistant {
				continue
			}
			var next llm.Message
			if j+1 < len(req.Messages) {
				next = req.Messages[j+1]
			}
			results := map[string]int{}
			for _, p := range next.Parts {
				if p.ToolResult != nil {
					results[p.ToolResult.CallID]++
				}
			}
			for _, p := range m.Parts {
				if p.ToolCall != nil {
					require.Equal(t, 1, results[p.ToolCall.ID], "request %d message %d: call %s (%s) has %d results",
						i, j, p.ToolCall.ID, p.ToolCall.Name, results[p.ToolCall.ID])
				}
			}
		}
	}
}

// latestSnapshot returns the newest page snapshot in req (the opening
// message's page or a tool result's snapshot), inside its delimiters.
func latestSnapshot(t *testing.T, req *llm.Request) string {
	t.Helper()
	for i := len(req.Messages) - 1; i >= 0; i-- {
		parts := req.Messages[i].Parts
		for j := len(parts) - 1; j >= 0; j-- {
			p := parts[j]
			if p.ToolResult != nil {
				var body map[string]any
				if json.Unmarshal([]byte(p.ToolResult.Content), &body) == nil {
					if s, ok := body["snapshot"].(string); ok && strings.Contains(s, untrustedOpen) {
						return s
					}
				}
			}
			if k := strings.Index(p.Text, untrustedOpen); k >= 0 {
				return p.Text[k:]
			}
		}
	}
	t.Fatal("no snapshot in the request")
	return ""
}

// ref finds the ref of the element with role and name in the newest
// snapshot of req.
func ref(t *testing.T, req *llm.Request, role, name string) string {
	t.Helper()
	snap := latestSnapshot(t, req)
	re := regexp.MustCompile(`(?m)^(@e\d+) ` + regexp.QuoteMeta(role) + ` ` + regexp.QuoteMeta(strconv.Quote(name)))
	m := re.FindStringSubmatch(snap)
	require.NotNil(t, m, "no %s %q in the snapshot:\n%s", role, name, snap)
	return m[1]
}

// answer is a controller turn whose calls depend on the request.
func answer(reasoning string, calls func(req *llm.Request) []llm.ToolCall) llm.Turn {
	return func(req *llm.Request) (*llm.Response, error) {
		return llm.Reply(reasoning, calls(req)...)(req)
	}
}

// on is a browser tool call on the element with role and name, with a
// confident reasoning and the extra arguments.
func on(t *testing.T, req *llm.Request, tool, role, name string, extra map[string]any) llm.ToolCall {
	t.Helper()
	args := map[string]any{"ref": ref(t, req, role, name), "reasoning": tool + " " + name, "confidence": 0.9}
	for k, v := range extra {
		args[k] = v
	}
	return llm.Call(tool, args)
}

func clickTurn(t *testing.T, role, name string) llm.Turn {
	return answer("I click "+name+".", func(req *llm.Request) []llm.ToolCall {
		return []llm.ToolCall{on(t, req, ToolClick, role, name, nil)}
	})
}

func fillTurn(t *testing.T, name, value string) llm.Turn {
	return answer("I fill in "+name+".", func(req *llm.Request) []llm.ToolCall {
		return []llm.ToolCall{on(t, req, ToolFill, "textbox", name, map[string]any{"value": value})}
	})
}

func completeTurn(status, reason string) llm.Turn {
	return llm.Reply("The task is over.", llm.Call(ToolComplete, map[string]any{"status": status, "reason": reason}))
}

func scrollTurn() llm.Turn {
	return llm.Reply("I scroll down.", llm.Call(ToolScroll, map[string]any{"direction": "down", "amount": 200, "reasoning": "see more", "confidence": 0.9}))
}

// loginTurns sign in as alice.
func loginTurns(t *testing.T) []llm.Turn {
	return []llm.Turn{
		fillTurn(t, "Username", "alice"),
		fillTurn(t, "Password", "s3cret"),
		clickTurn(t, "button", "Sign in"),
	}
}

// toolResults returns the tool results of the last message of req, by
// tool name, with their content decoded.
func toolResults(t *testing.T, req *llm.Request) []decodedResult {
	t.Helper()
	last := req.Messages[len(req.Messages)-1]
	var out []decodedResult
	for _, p := range last.Parts {
		if p.ToolResult == nil {
			continue
		}
		r := decodedResult{ToolResult: *p.ToolResult}
		require.NoError(t, json.Unmarshal([]byte(p.ToolResult.Content), &r.body), "tool result %s", p.ToolResult.Content)
		out = append(out, r)
	}
	return out
}

type decodedResult struct {
	llm.ToolResult
	body map[string]any
}

// messageText joins the text parts of m.
func messageText(m llm.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// requestText is everything textual in req's messages.
func requestText(req *llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			b.WriteString(p.Text)
			if p.ToolResult != nil {
				b.WriteString(p.ToolResult.Content)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// countImages counts the images of req.
func countImages(req *llm.Request) int {
	n := 0
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Image != nil {
				n++
			}
			if p.ToolResult != nil {
				n += len(p.ToolResult.Images)
			}
		}
	}
	return n
}

// modelError is a turn that fails with a classified model error.
func modelError(class error, msg string) llm.Turn {
	return func(*llm.Request) (*llm.Response, error) {
		return nil, &llm.Error{Class: class, Provider: llm.ProviderScripted, Message: msg}
	}
}
