package trace_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/format"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/steps"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/trace"
)

const (
	exportProfilePage = `<!doctype html><title>Profile</title>
<h1>Edit profile</h1>
<form action="/saved" method="get">
<p><label>First name <input name="first"></label></p>
<p><label><input type="checkbox" name="news"> Newsletter</label></p>
<p><label>Color <select name="color"><option value="r">Red</option><option value="b">Blue</option></select></label></p>
%s <button type="button">Cancel</button>
</form>`
	exportSaveButton = `<button type="submit" id="save">Save</button>`
	exportLoginPage  = `<!doctype html><title>Sign in</title><h1>Sign in</h1>
<form action="/session" method="post">
<p><label>Username <input name="username" data-testid="user"></label></p>
<p><label>Password <input type="password" name="password"></label></p>
<button type="submit">Sign in</button>
</form>`
	exportPassword = "pw-Zq8!x#41"
)

// exportSite is a small site: a profile form (whose Save button can be
// taken away) and a login that accepts alice with exportPassword.
type exportSite struct {
	*httptest.Server
	noSave atomic.Bool
}

func newExportSite(t *testing.T) *exportSite {
	t.Helper()
	s := &exportSite{}
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
	mux.HandleFunc("/profile", func(w http.ResponseWriter, _ *http.Request) {
		save := exportSaveButton
		if s.noSave.Load() {
			save = ""
		}
		page(w, fmt.Sprintf(exportProfilePage, save))
	})
	mux.HandleFunc("/saved", func(w http.ResponseWriter, r *http.Request) {
		page(w, `<!doctype html><title>Saved</title><h1>Profile saved</h1><p>Saved for `+r.URL.Query().Get("first")+`</p>`)
	})
	mux.HandleFunc("/login", func(w http.ResponseWriter, _ *http.Request) { page(w, exportLoginPage) })
	mux.HandleFunc("POST /session", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("username") == "alice" && r.FormValue("password") == exportPassword {
			http.Redirect(w, r, "/home", http.StatusSeeOther)
			return
		}
		http.Redirect(w, r, "/login?failed=1", http.StatusSeeOther)
	})
	mux.HandleFunc("/home", func(w http.ResponseWriter, _ *http.Request) {
		page(w, `<!doctype html><title>Home</title><h1>Welcome, alice</h1>`)
	})
	mux.HandleFunc("/favicon.ico", http.NotFound)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// loopback allows 127.0.0.1 only.
type loopback struct{}

func (loopback) Check(_ context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if u.Hostname() != "127.0.0.1" {
		return fmt.Errorf("%s is not allowed", u.Hostname())
	}
	return nil
}

// leased is a runner.Browser over one pool lease at a time.
type leased struct {
	pool  *pool.Pool
	mu    sync.Mutex
	lease *pool.Lease
}

func (b *leased) current() *pool.Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lease
}

func (b *leased) Session() *browser.Session { return b.current().Session() }
func (b *leased) Done() <-chan struct{}     { return b.current().Done() }
func (b *leased) Renew(ctx context.Context) (*browser.Session, error) {
	b.current().Release()
	l, err := b.pool.Lease(ctx, browser.SessionOptions{})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.lease = l
	b.mu.Unlock()
	return l.Session(), nil
}

// nopSink drops what a run reports.
type nopSink struct{}

func (nopSink) StepStarted(context.Context, int) error            { return nil }
func (nopSink) StepFinished(context.Context, runner.Step) error   { return nil }
func (nopSink) PromptRun(context.Context, runner.PromptRun) error { return nil }
func (nopSink) Event(context.Context, runner.Event) error         { return nil }

// newPool starts a pool of one Chromium for the test.
func newPool(t *testing.T) *pool.Pool {
	t.Helper()
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: t.TempDir(), HealthInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	t.Cleanup(p.Close)
	return p
}

// runSteps runs a goal of steps with the offline steps controller on a
// real Chromium, as a Wayfinder run with provider "steps" does.
func runSteps(t *testing.T, p *pool.Pool, goal, startURL string, secrets []runner.Secret) runner.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := steps.New(llm.Settings{Provider: llm.ProviderSteps, Goal: goal})
	require.NoError(t, err)
	lease, err := p.Lease(ctx, browser.SessionOptions{})
	require.NoError(t, err)
	b := &leased{pool: p, lease: lease}
	defer func() { b.current().Release() }()
	res, err := (&runner.Runner{}).Run(ctx, b, runner.Params{
		Goal: goal, StartURL: startURL, Policy: loopback{}, Controller: m, Secrets: secrets,
		JudgeStrategy: runner.JudgeHeuristic, Page: browser.PageOptions{Width: 800, Height: 600},
	}, nopSink{})
	require.NoError(t, err)
	return res
}

const profileSteps = `Type "Ada" into "First name"
Check "Newsletter"
Select "Blue" from "Color"
Click the "Save" button`

// rodModule is a Go module that requires go-rod at the version of this
// repository, resolved from the module cache alone.
type rodModule struct {
	dir     string
	browser string
}

func newRodModule(t *testing.T) *rodModule {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: building and running an exported go-rod test takes a while")
	}
	bin, err := pool.FindChromium(os.Getenv("WAYFINDER_CHROMIUM"))
	require.NoError(t, err)
	root := repoRoot(t)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	version := ""
	for line := range strings.Lines(string(mod)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/go-rod/rod" {
			version = f[1]
		}
	}
	require.NotEmpty(t, version, "go-rod in go.mod")
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	var need strings.Builder
	for line := range strings.Lines(string(sums)) {
		if strings.HasPrefix(line, "github.com/go-rod/rod ") || strings.HasPrefix(line, "github.com/ysmood/") {
			need.WriteString(line)
		}
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module replaytest\n\ngo 1.26\n\nrequire github.com/go-rod/rod "+version+"\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), []byte(need.String()), 0o600))
	return &rodModule{dir: dir, browser: bin}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test")
		dir = parent
	}
}

// write puts a file into package dir pkg of the module.
func (m *rodModule) write(t *testing.T, pkg, name string, src []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(m.dir, pkg), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(m.dir, pkg, name), src, 0o600))
}

// goTest runs `go test` on package dir pkg offline, with env added; it
// returns the output and whether the tests passed.
func (m *rodModule) goTest(t *testing.T, pkg string, env []string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-count=1", "-v", "./" + pkg}, args...)...)
	cmd.Dir = m.dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	require.NotContains(t, string(out), "[setup failed]", "the module does not build:\n%s", out)
	require.NotContains(t, string(out), "[build failed]", "the exported test does not build:\n%s", out)
	return string(out), err == nil
}

// TestExportRecordedTrace records a trace on a real page with the offline
// steps controller and exports it: the Go test passes against the page
// and fails once the page lost the Save button; the step list parses and
// completes the task when run again.
func TestExportRecordedTrace(t *testing.T) {
	t.Parallel()
	site := newExportSite(t)
	p := newPool(t)
	res := runSteps(t, p, profileSteps, site.URL+"/profile", nil)
	require.Equal(t, runner.StatusCompleted, res.Status, "%+v", res.Err)
	tr := res.Trace
	require.NotNil(t, tr)
	var tools []string
	for _, a := range tr.Actions {
		tools = append(tools, a.Tool)
		require.NotNil(t, a.Target, "step %d %s: %s", a.Step, a.Tool, a.TargetError)
	}
	require.Equal(t, []string{"browser_fill", "browser_check", "browser_select", "browser_click"}, tools)
	// Through the stored form, as the API exports it.
	actions, final, err := tr.Encode()
	require.NoError(t, err)
	tr, err = trace.Decode(actions, final)
	require.NoError(t, err)

	t.Run("steps", func(t *testing.T) {
		out, err := trace.ExportSteps(tr)
		require.NoError(t, err)
		parsed, err := steps.Parse(out)
		require.NoError(t, err, out)
		kinds := make([]steps.StepKind, len(parsed))
		for i, st := range parsed {
			kinds[i] = st.Kind
		}
		require.Equal(t, []steps.StepKind{steps.Fill, steps.Check, steps.Select, steps.Click, steps.ExpectURL}, kinds, out)
		require.Equal(t, "button", parsed[3].Role)
		require.Equal(t, "Save", parsed[3].Target)
		require.Equal(t, trace.URLPattern(site.URL+"/saved"), parsed[4].Value)

		again := runSteps(t, p, out, site.URL+"/profile", nil)
		require.Equal(t, runner.StatusCompleted, again.Status, "%+v\n%s", again.Err, out)
		require.Contains(t, again.FinalURL, site.URL+"/saved?first=Ada&news=on&color=b")
	})

	t.Run("go test", func(t *testing.T) {
		m := newRodModule(t)
		src, err := trace.ExportGoTest(tr, "Replay profile")
		require.NoError(t, err)
		formatted, err := format.Source(src)
		require.NoError(t, err)
		require.Equal(t, string(formatted), string(src), "gofmt-ed")
		m.write(t, "profile", "replay_test.go", src)
		args := []string{"-run", "^TestReplayProfile$", "-args", "-browser", m.browser, "-step-timeout", "5s"}

		out, ok := m.goTest(t, "profile", nil, args...)
		require.True(t, ok, "the exported test fails on the page it was recorded on:\n%s\n%s", out, src)
		require.Contains(t, out, "--- PASS: TestReplayProfile")

		site.noSave.Store(true)
		defer site.noSave.Store(false)
		out, ok = m.goTest(t, "profile", nil, args...)
		require.False(t, ok, "the exported test passes without the Save button:\n%s", out)
		require.Contains(t, out, `step 4: no single element is button "Save"`)
	})
}

// TestExportKeepsSecretsOut: a trace of a login whose password is a
// secret exports with the placeholder or an environment variable, never
// the value; the Go test signs in with the value from the environment
// and skips without it.
func TestExportKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	site := newExportSite(t)
	p := newPool(t)
	goal := `Type "alice" into "Username"
Type "{{password}}" into "Password"
Click the "Sign in" button
Expect text "Welcome, alice"`
	res := runSteps(t, p, goal, site.URL+"/login", []runner.Secret{{Name: "password", Value: exportPassword, Domains: []string{"127.0.0.1"}}})
	require.Equal(t, runner.StatusCompleted, res.Status, "%+v", res.Err)
	require.Contains(t, res.FinalURL, "/home")
	tr := res.Trace
	require.NotNil(t, tr)
	require.Len(t, tr.Actions, 3)
	require.Equal(t, "{{password}}", tr.Actions[1].Arguments["value"])

	stepList, err := trace.ExportSteps(tr)
	require.NoError(t, err)
	require.NotContains(t, stepList, exportPassword)
	require.Contains(t, stepList, `Type "{{password}}" into "Password"`)
	_, err = steps.Parse(stepList)
	require.NoError(t, err)

	src, err := trace.ExportGoTest(tr, "TestLogin")
	require.NoError(t, err)
	require.NotContains(t, string(src), exportPassword)
	require.Contains(t, string(src), `secret := secrets(t, "WAYFINDER_SECRET_PASSWORD")`)
	require.Contains(t, string(src), `secret["WAYFINDER_SECRET_PASSWORD"]`)
	require.Contains(t, string(src), `[data-testid=\"user\"]`, "the username field is found by its test id")

	m := newRodModule(t)
	m.write(t, "login", "login_test.go", src)
	args := []string{"-run", "^TestLogin$", "-args", "-browser", m.browser, "-step-timeout", "5s"}
	out, ok := m.goTest(t, "login", nil, args...)
	require.True(t, ok, out)
	require.Contains(t, out, "--- SKIP: TestLogin")
	require.Contains(t, out, "set WAYFINDER_SECRET_PASSWORD")

	out, ok = m.goTest(t, "login", []string{"WAYFINDER_SECRET_PASSWORD=" + exportPassword}, args...)
	require.True(t, ok, "%s\n%s", out, src)
	require.Contains(t, out, "--- PASS: TestLogin")

	out, ok = m.goTest(t, "login", []string{"WAYFINDER_SECRET_PASSWORD=wrong"}, args...)
	require.False(t, ok, "a wrong password still reaches the home page:\n%s", out)
	require.Contains(t, out, "the final page")
}

// fp is a recorded fingerprint of an element.
func fp(role, name string, attrs map[string]string) *trace.Fingerprint {
	return &trace.Fingerprint{Role: role, Name: name, Tag: "input", Attrs: attrs, Path: "form > p > input",
		Viewport: trace.Size{Width: 1024, Height: 700}}
}

// everyTool is a trace with one action of each tool the engine records,
// and a custom tool.
func everyTool() *trace.Trace {
	act := func(tool string, args map[string]any, target *trace.Fingerprint) trace.Action {
		return trace.Action{Tool: tool, Arguments: args, Target: target, URL: "http://127.0.0.1:1/form",
			Page: trace.Signature{URLPattern: "http://127.0.0.1:1/form"}}
	}
	ref := map[string]any{"ref": "@e1"}
	with := func(kv ...any) map[string]any {
		m := map[string]any{"ref": "@e1"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	acts := []trace.Action{
		act("browser_click", ref, fp("button", "Save", map[string]string{"id": "save", "data-testid": `sa"ve`})),
		act("browser_click", with("double", true), fp("link", "Details", nil)),
		act("browser_fill", with("value", "user {{app.user}} and {{ Password }}"), fp("textbox", "Login", map[string]string{"name": "login", "id": ":r1:"})),
		act("browser_fill", with("value", "x", "clear_first", false), fp("textbox", "Note", nil)),
		act("browser_fill", with("value", ""), fp("textbox", "Note", nil)),
		act("browser_select", with("value", "Blue"), fp("combobox", "Color", nil)),
		act("browser_check", with("checked", false), fp("checkbox", "News", nil)),
		act("browser_check", ref, fp("checkbox", "Terms", nil)),
		act("browser_scroll", map[string]any{"direction": "down", "amount": 200.0}, nil),
		act("browser_scroll", map[string]any{"direction": "bottom"}, nil),
		act("browser_scroll", ref, fp("heading", "Footer", nil)),
		act("browser_navigate", map[string]any{"url": "http://127.0.0.1:1/next"}, nil),
		act("browser_back", nil, nil),
		act("browser_press_key", map[string]any{"keys": "Control+a Enter"}, nil),
		act("browser_press_key", with("keys", "Tab"), fp("textbox", "Note", nil)),
		act("browser_press_key", map[string]any{"keys": "Hyper+Q"}, nil),
		act("browser_hover", ref, fp("menuitem", "Account", nil)),
		act("browser_type", map[string]any{"text": "hello"}, nil),
		act("browser_type", with("text", "more"), fp("textbox", "Note", nil)),
		act("browser_wait", map[string]any{"text": "Saved", "timeout_ms": 3000.0}, nil),
		act("browser_wait", map[string]any{"seconds": 1.5}, nil),
		act("browser_wait", ref, fp("dialog", "Done", nil)),
		act("browser_click_at", map[string]any{"x": 10.0, "y": 20.5}, nil),
		act("browser_tabs", map[string]any{"action": "switch", "tab": "t2"}, nil),
		act("browser_extract", map[string]any{"rows": "table tr", "fields": map[string]any{"a": "td"}}, nil),
		act("lookup_order", map[string]any{"id": "7"}, nil),
		act("browser_click", map[string]any{"target": map[string]any{"role": "button", "name": "Go on"}}, nil),
		{Tool: "browser_click", Arguments: ref, TargetError: "no DOM details: the element left the page"},
		{Tool: "browser_hover", Arguments: ref, TargetError: "100% gone: %d"},
	}
	for i := range acts {
		acts[i].Step = i + 1
	}
	return &trace.Trace{Format: trace.FormatVersion, Goal: "Do everything\nthen // stop */ \x1b[31m", StartURL: "http://127.0.0.1:1/form",
		Actions: acts, Final: trace.Final{URL: "http://127.0.0.1:1/orders/42?x=1", Page: trace.Signature{URLPattern: "http://127.0.0.1:1/orders/*"}}}
}

// TestExportGoTestEveryTool: every tool becomes a call of the exported
// test, one that cannot be replayed a t.Fatal line naming its step;
// secrets become environment variables; the file is gofmt-ed and builds.
func TestExportGoTestEveryTool(t *testing.T) {
	t.Parallel()
	tr := everyTool()
	src, err := trace.ExportGoTest(tr, "every tool")
	require.NoError(t, err)
	s := string(src)
	for _, want := range []string{
		"func TestEveryTool(t *testing.T) {",
		`secret := secrets(t, "WAYFINDER_SECRET_APP_USER", "WAYFINDER_SECRET_PASSWORD")`,
		`page := start(t, "http://127.0.0.1:1/form", 1024, 700)`,
		`click(t, page, 1, target{selectors: []string{"[data-testid=\"sa\\\"ve\"]", "[id=\"save\"]"}, role: "button", name: "Save"`,
		`click(t, page, 2, target{role: "link", name: "Details"`,
		`fill(t, page, 3, target{selectors: []string{"input[name=\"login\"]"}, role: "textbox", name: "Login"`,
		`"user "+secret["WAYFINDER_SECRET_APP_USER"]+" and "+secret["WAYFINDER_SECRET_PASSWORD"], true)`,
		`, "x", false)`,
		`, "", true)`,
		`selectOption(t, page, 6, target{role: "combobox", name: "Color"`,
		`check(t, page, 7, target{role: "checkbox", name: "News"`,
		`}, false)`,
		`scrollPage(t, page, 9, "down", 200)`,
		`scrollPage(t, page, 10, "bottom", 0)`,
		`scrollTo(t, page, 11, target{role: "heading", name: "Footer"`,
		`navigate(t, page, 12, "http://127.0.0.1:1/next")`,
		`back(t, page, 13)`,
		`press(t, page, 14, nil, []input.Key{input.ControlLeft, 'a'}, []input.Key{input.Enter})`,
		`press(t, page, 15, &target{role: "textbox", name: "Note"`,
		`t.Fatal("unsupported: step 16 (browser_press_key) presses the key \"Hyper\", which go-rod's US keyboard has not")`,
		`hover(t, page, 17, target{role: "menuitem", name: "Account"`,
		`typeText(t, page, 18, nil, "hello")`,
		`typeText(t, page, 19, &target{role: "textbox", name: "Note"`,
		`waitText(t, page, 20, "Saved", 3000*time.Millisecond)`,
		`time.Sleep(1500 * time.Millisecond)`,
		`waitVisible(t, page, 22, target{role: "dialog", name: "Done"`,
		`clickAt(t, page, 23, 10, 20.5)`,
		`t.Fatal("unsupported: step 24 (browser_tabs) switches or closes a tab, which is named by the recording session only")`,
		`extract(t, page, 25, "table tr")`,
		`t.Fatal("unsupported: step 26 (lookup_order) is a custom tool of the run")`,
		`click(t, page, 27, target{role: "button", name: "Go on"}, 1)`,
		`t.Fatal("unsupported: step 28 (browser_click) was aimed at an element that was not recorded: no DOM details: the element left the page")`,
		`t.Fatalf("%s", "unsupported: step 29 (browser_hover) was aimed at an element that was not recorded: 100% gone: %d")`,
		`onPage(t, page, 0, "(?i)^http://127\\.0\\.0\\.1:1/orders/[^/]+$")`,
		"// Goal: \"Do everything\\nthen // stop */ \\x1b[31m\"\n",
	} {
		require.Contains(t, s, want)
	}
	require.NotContains(t, s, `[id=\":r1:\"]`, "a generated id is no way to find an element")
	formatted, err := format.Source(src)
	require.NoError(t, err)
	require.Equal(t, s, string(formatted))

	m := newRodModule(t)
	m.write(t, "every", "every_test.go", src)
	out, ok := m.goTest(t, "every", nil, "-run", "^$")
	require.True(t, ok, "%s\n%s", out, src)
}

func TestExportTestName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Replay 1a2b3c4d": "TestReplay1a2b3c4d",
		"TestLogin":       "TestLogin",
		"Testing things":  "TestTestingThings",
		"":                "TestReplay",
		"checkout flow!":  "TestCheckoutFlow",
		"ünïcode 7":       "TestNCode7",
	} {
		src, err := trace.ExportGoTest(&trace.Trace{StartURL: "http://127.0.0.1:1/"}, in)
		require.NoError(t, err)
		require.Contains(t, string(src), "func "+want+"(t *testing.T) {", "name %q", in)
	}
	require.Equal(t, "WAYFINDER_SECRET_APP_EXAMPLE_COM_PASSWORD", trace.SecretEnv("app.example.com.password"))
}

// TestExportSteps: each action as its step, parsed back by the steps
// controller's grammar to the same kind, target and value.
func TestExportSteps(t *testing.T) {
	t.Parallel()
	tr := everyTool()
	for _, tc := range []struct {
		step                int    // of everyTool
		line                string // "" when not exportable
		kind                steps.StepKind
		target, value, role string
	}{
		{1, `Click the "Save" button`, steps.Click, "Save", "", "button"},
		{2, "", "", "", "", ""},
		{3, `Type "user {{app.user}} and {{ Password }}" into "Login"`, steps.Fill, "Login", "user {{app.user}} and {{ Password }}", ""},
		{4, `Type "x" into "Note"`, steps.Fill, "Note", "x", ""},
		{5, `Clear "Note"`, steps.Fill, "Note", "", ""},
		{6, `Select "Blue" from "Color"`, steps.Select, "Color", "Blue", ""},
		{7, `Uncheck the "News" checkbox`, steps.Uncheck, "News", "", "checkbox"},
		{8, `Check the "Terms" checkbox`, steps.Check, "Terms", "", "checkbox"},
		{9, "Scroll down", steps.Scroll, "", "down", ""},
		{10, "Scroll to the bottom", steps.Scroll, "", "bottom", ""},
		{11, `Scroll to "Footer"`, steps.Scroll, "Footer", "", ""},
		{12, "Open http://127.0.0.1:1/next", steps.Open, "http://127.0.0.1:1/next", "", ""},
		{13, "", "", "", "", ""},
		{14, `Press "Control+a Enter"`, steps.Press, "", "Control+a Enter", ""},
		{17, "", "", "", "", ""},
		{18, `Type "hello"`, steps.Fill, "", "hello", ""},
		{20, `Wait for "Saved"`, steps.WaitText, "", "Saved", ""},
		{21, "Wait 1.5 seconds", steps.WaitTime, "", "1.5", ""},
		{22, `Wait for "Done"`, steps.WaitText, "", "Done", ""},
		{23, "", "", "", "", ""},
		{24, "", "", "", "", ""},
		{26, "", "", "", "", ""},
		{27, `Click the "Go on" button`, steps.Click, "Go on", "", "button"},
		{28, "", "", "", "", ""},
	} {
		t.Run(fmt.Sprint(tc.step), func(t *testing.T) {
			one := &trace.Trace{StartURL: tr.StartURL, Final: tr.Final, Actions: []trace.Action{tr.Actions[tc.step-1]}}
			out, err := trace.ExportSteps(one)
			if tc.line == "" {
				require.ErrorIs(t, err, trace.ErrNotExportable)
				require.Contains(t, err.Error(), fmt.Sprintf("step %d (", tc.step))
				return
			}
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Equal(t, tc.line, lines[len(lines)-2])
			require.Equal(t, `Expect URL "http://127.0.0.1:1/orders/*"`, lines[len(lines)-1])
			parsed, err := steps.Parse(out)
			require.NoError(t, err, out)
			require.Len(t, parsed, 2)
			st := parsed[0]
			require.Equal(t, tc.kind, st.Kind)
			require.Equal(t, tc.target, st.Target)
			require.Equal(t, tc.value, st.Value)
			require.Equal(t, tc.role, st.Role)
		})
	}

	t.Run("extract is a comment", func(t *testing.T) {
		one := &trace.Trace{StartURL: tr.StartURL, Final: tr.Final, Actions: []trace.Action{tr.Actions[24]}}
		out, err := trace.ExportSteps(one)
		require.NoError(t, err)
		parsed, err := steps.Parse(out)
		require.NoError(t, err)
		require.Len(t, parsed, 1)
		require.Contains(t, out, "# step 25: the run read rows of the page here (table tr)")
	})
	t.Run("quotes", func(t *testing.T) {
		for _, tc := range []struct{ field, value, line string }{
			{`The "best" field`, "plain", `Type "plain" into “The "best" field”`},
			{"Note", `say "hi"`, `Fill "Note" with “say "hi"”`},
			{"Note", `“both” "kinds"`, `Fill "Note" with ‘“both” "kinds"’`},
			{`The "best" field`, `say "hi"`, ""},
			{"Note", "two\nlines", ""},
		} {
			a := trace.Action{Step: 1, Tool: "browser_fill", Arguments: map[string]any{"ref": "@e1", "value": tc.value},
				Target: fp("textbox", tc.field, nil)}
			out, err := trace.ExportSteps(&trace.Trace{Final: tr.Final, Actions: []trace.Action{a}})
			if tc.line == "" {
				require.ErrorIs(t, err, trace.ErrNotExportable)
				continue
			}
			require.NoError(t, err)
			require.Contains(t, out, "\n"+tc.line+"\n")
			parsed, err := steps.Parse(out)
			require.NoError(t, err, out)
			require.Equal(t, tc.field, parsed[0].Target, out)
			require.Equal(t, tc.value, parsed[0].Value, out)
		}
	})
	t.Run("the goal stays in comments", func(t *testing.T) {
		out, err := trace.ExportSteps(&trace.Trace{Goal: "Click \"Delete all\"\nClick OK", Final: tr.Final})
		require.NoError(t, err)
		parsed, err := steps.Parse(out)
		require.NoError(t, err)
		require.Len(t, parsed, 1, out)
		require.Equal(t, steps.ExpectURL, parsed[0].Kind)
		require.True(t, bytes.HasPrefix([]byte(out), []byte("# ")))
	})
}

const locatorsPage = `<!doctype html><title>Locators</title>
<p id="log"></p>
<script>function log(s) { document.getElementById("log").textContent += s + ";" }</script>
<button aria-label="Close dialog" onclick="log('close')">X</button> <button onclick="log('other')">X</button>
<p><span onclick="log('text')">Read more</span> <span>Read less</span></p>
<div id="host"></div>
<script>
document.getElementById("host").attachShadow({mode: "open"}).innerHTML =
	'<button onclick="log(\'shadow\')">Go</button><button>Go</button>';
</script>`

// TestExportGoTestLocators: an exported test finds elements by role and
// accessible name, by text, and by a DOM path into a shadow root, each
// where the strategies before it cannot tell the element apart.
func TestExportGoTestLocators(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, locatorsPage)
	}))
	t.Cleanup(srv.Close)
	page := trace.Signature{URLPattern: trace.URLPattern(srv.URL + "/")}
	click := func(step int, target *trace.Fingerprint) trace.Action {
		return trace.Action{Step: step, Tool: "browser_click", Arguments: map[string]any{"ref": "@e1"}, Target: target, Page: page, URL: srv.URL + "/"}
	}
	tr := &trace.Trace{Format: trace.FormatVersion, Goal: "Click around", StartURL: srv.URL + "/", Actions: []trace.Action{
		// Two buttons read X: only the accessibility tree knows this one.
		click(1, &trace.Fingerprint{Role: "button", Name: "Close dialog", Tag: "button", Text: "X", Path: "no > such > path"}),
		// No name to go by: the text.
		click(2, &trace.Fingerprint{Role: "generic", Tag: "span", Text: "Read more", Path: "no > such > path"}),
		// Two buttons named Go in a shadow root: the path.
		click(3, &trace.Fingerprint{Role: "button", Name: "Go", Tag: "button", Text: "Go", Path: "div#host >> button:nth-of-type(1)"}),
		{Step: 4, Tool: "browser_wait", Arguments: map[string]any{"text": "close;text;shadow;"}, Page: page, URL: srv.URL + "/"},
	}, Final: trace.Final{URL: srv.URL + "/", Page: page}}
	src, err := trace.ExportGoTest(tr, "locators")
	require.NoError(t, err)
	m := newRodModule(t)
	m.write(t, "locators", "locators_test.go", src)
	out, ok := m.goTest(t, "locators", nil, "-run", "^TestLocators$", "-args", "-browser", m.browser, "-step-timeout", "5s")
	require.True(t, ok, "%s\n%s", out, src)
}
