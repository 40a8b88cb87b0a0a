package runner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/llm"
)

// testPassword has characters that every encoding changes (quote,
// ampersand, angle brackets, space), so each encoded form is its own
// string to find.
const testPassword = `Tr0ub"4dor &<staple>`

// leakForms are the forms in which a value could escape: as is, escaped
// for URLs, HTML and JSON, and base64-encoded.
func leakForms(v string) []string {
	js, _ := json.Marshal(v)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	raw := strings.TrimSpace(b.String())
	return []string{v, url.QueryEscape(v), url.PathEscape(v), html.EscapeString(v),
		string(js[1 : len(js)-1]), raw[1 : len(raw)-1],
		base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))}
}

// requireNoLeak fails when text holds value in any of its forms.
func requireNoLeak(t *testing.T, value, what, text string) {
	t.Helper()
	for _, f := range leakForms(value) {
		require.NotContains(t, text, f, "%s holds the secret (as %q)", what, f)
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// requireRecordClean checks that nothing the model was sent and nothing
// the sink got holds value.
func requireRecordClean(t *testing.T, value string, reqs []*llm.Request, sink *recordingSink, res Result) {
	t.Helper()
	for i, req := range reqs {
		requireNoLeak(t, value, fmt.Sprintf("request %d", i+1), jsonText(t, req))
		if req.Observation != nil {
			requireNoLeak(t, value, fmt.Sprintf("request %d's observation", i+1), jsonText(t, req.Observation))
		}
	}
	for _, st := range sink.steps() {
		st.Screenshot = nil
		requireNoLeak(t, value, fmt.Sprintf("step %d", st.Number), jsonText(t, st)+st.Reasoning)
	}
	for _, e := range sink.allEvents() {
		requireNoLeak(t, value, "event", jsonText(t, e))
	}
	for _, pr := range sink.promptRuns() {
		requireNoLeak(t, value, "prompt run", jsonText(t, pr))
	}
	res.FinalScreenshot = nil
	requireNoLeak(t, value, "result", jsonText(t, res))
}

// loginServer is a login form that records what it is sent.
type loginServer struct {
	*httptest.Server
	mu    sync.Mutex
	posts []url.Values
}

// newLoginServer serves /login (a form posting to /session, which leads
// to /dashboard when the credentials are alice and testPassword) and the
// extra pages.
func newLoginServer(t *testing.T, pages map[string]string) *loginServer {
	t.Helper()
	ls := &loginServer{}
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(body))
		}
	}
	mux.HandleFunc("/login", page(loginPage))
	mux.HandleFunc("/dashboard", page(dashboardPage))
	mux.HandleFunc("/favicon.ico", http.NotFound)
	mux.HandleFunc("POST /session", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		ls.mu.Lock()
		ls.posts = append(ls.posts, r.PostForm)
		ls.mu.Unlock()
		if r.PostForm.Get("username") == "alice" && r.PostForm.Get("password") == testPassword {
			http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
			return
		}
		page(strings.Replace(loginPage, "<h1>Sign in</h1>", "<h1>Sign in</h1><p>Wrong username or password</p>", 1))(w, r)
	})
	for path, body := range pages {
		mux.HandleFunc(path, page(body))
	}
	ls.Server = httptest.NewServer(mux)
	t.Cleanup(ls.Close)
	return ls
}

func (ls *loginServer) received() []url.Values {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return append([]url.Values(nil), ls.posts...)
}

// hostsPolicy allows the listed host names.
type hostsPolicy []string

func (h hostsPolicy) Check(_ context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	for _, name := range h {
		if u.Hostname() == name {
			return nil
		}
	}
	return fmt.Errorf("%s is not an allowed domain", u.Hostname())
}

func loginSecrets(domains ...string) []Secret {
	return []Secret{
		{Name: "username", Value: "alice", Domains: domains, Hint: "user name of the test login"},
		{Name: "password", Value: testPassword, Domains: domains, Hint: "password of the test login"},
	}
}

func TestSecretsLogInWithoutShowingThem(t *testing.T) {
	t.Parallel()
	ls := newLoginServer(t, nil)
	m := llm.NewScripted("controller",
		fillTurn(t, "Password", "{{passwrd}}"), // a misspelled placeholder is refused, not typed
		fillTurn(t, "Username", "{{username}}"),
		fillTurn(t, "Password", "{{ password }}"),
		clickTurn(t, "button", "Sign in"),
		completeTurn("success", "signed in; the dashboard is shown"))
	p := Params{
		// The caller wrote the password into the goal too: the model sees
		// its placeholder there.
		Goal:     "Sign in as alice with password " + testPassword + " and open the dashboard",
		StartURL: ls.URL + "/login", Policy: loopbackOnly{}, Controller: m,
		Page:    browser.PageOptions{Width: 640, Height: 400},
		Secrets: loginSecrets("127.0.0.1"),
	}
	res, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)

	posts := ls.received()
	require.Len(t, posts, 1)
	require.Equal(t, "alice", posts[0].Get("username"))
	require.Equal(t, testPassword, posts[0].Get("password"), "the page got the real password")

	reqs := m.Requests()
	first := reqs[0]
	require.Contains(t, first.System, "{{username}}: user name of the test login (on 127.0.0.1)")
	require.Contains(t, first.System, "{{password}}: password of the test login (on 127.0.0.1)")
	require.Contains(t, messageText(first.Messages[0]), "Goal: Sign in as {{username}} with password {{password}} and open the dashboard")

	steps := sink.steps()
	misspelled := steps[0].Actions[1]
	require.Equal(t, "invalid_params", misspelled.Outcome)
	require.Contains(t, misspelled.Message, "{{passwrd}} names no credential of this run; the placeholders are {{username}}, {{password}}")
	user, pass := steps[1].Actions[0], steps[2].Actions[0]
	require.Equal(t, "ok", user.Outcome, user.Message)
	require.Equal(t, "{{username}}", user.Arguments["value"], "the record keeps the placeholder")
	require.Equal(t, "{{username}}", user.Result["value"], "the field's value is shown as the placeholder")
	require.Equal(t, "ok", pass.Outcome, pass.Message)
	require.Equal(t, "{{ password }}", pass.Arguments["value"])
	require.Equal(t, "{{ password }}", pass.Result["value"])
	// What the model is told after the fill: the placeholder again.
	results := toolResults(t, reqs[3])
	require.Equal(t, "{{ password }}", results[0].body["value"])
	require.Contains(t, latestSnapshot(t, reqs[4]), "Welcome, {{username}}", "page text that shows a secret shows its placeholder")

	requireRecordClean(t, testPassword, reqs, sink, res)
	requireRecordClean(t, "alice", reqs, sink, res)
}

// echoPage shows the password (and a token to redact) in every way a page
// might: text, a text field's value, a password field, a link, an
// attribute and base64.
var echoPage = `<!doctype html><title>Echo ` + html.EscapeString(testPassword) + `</title>
<p>Your password is ` + html.EscapeString(testPassword) + ` and your token hdr-token-123456.</p>
<p>Encoded: ` + base64.StdEncoding.EncodeToString([]byte(testPassword)) + `</p>
<label>Copy <input name="copy" value="` + html.EscapeString(testPassword) + `"></label>
<label>Secret <input name="secret" type="password" value="` + html.EscapeString(testPassword) + `"></label>
<label>Scratch <input name="scratch"></label>
<button aria-label="Reveal ` + html.EscapeString(testPassword) + `">?</button>
<a href="/next?pw=` + url.QueryEscape(testPassword) + `">Next</a>`

// observing is a scripted controller that asks for the structured page,
// as the offline step controller does.
type observing struct{ *llm.Scripted }

func (observing) Provider() string { return llm.ProviderSteps }

func TestSecretsRedactedFromWhatPagesEcho(t *testing.T) {
	t.Parallel()
	ls := newLoginServer(t, map[string]string{
		"/echo": echoPage,
		"/next": `<!doctype html><title>Next</title><p>Arrived.</p>`,
	})
	m := llm.NewScripted("controller",
		fillTurn(t, "Scratch", "{{password}}"),
		llm.Reply("I look again.", llm.Call(ToolGetSnapshot, map[string]any{})),
		llm.Reply("I read the rows.", llm.Call(ToolExtract, map[string]any{"rows": "p", "fields": map[string]string{"text": ""}, "reasoning": "read", "confidence": 0.9})),
		clickTurn(t, "link", "Next"),
		completeTurn("failed", "nothing to do"))
	p := Params{
		Goal: "Look at the page", StartURL: ls.URL + "/echo", Policy: loopbackOnly{},
		Controller: observing{m}, Page: browser.PageOptions{Width: 640, Height: 400},
		Secrets: loginSecrets("127.0.0.1"), Redact: []string{"hdr-token-123456"},
	}
	res, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
	reqs := m.Requests()
	require.Len(t, reqs, 5)

	snap := latestSnapshot(t, reqs[0])
	require.Contains(t, snap, `page: "Echo {{password}}"`)
	require.Contains(t, snap, `textbox "Copy" = "{{password}}"`, "a text field echoing the password shows the placeholder:\n%s", snap)
	require.Contains(t, snap, `button "Reveal {{password}}"`)
	obs := reqs[0].Observation
	require.NotNil(t, obs)
	require.Contains(t, obs.Text, "Your password is {{password}} and your token [redacted].")
	require.Contains(t, obs.Text, "Encoded: {{password}}")

	results := toolResults(t, reqs[1])
	require.Equal(t, "{{password}}", results[0].body["value"], "the fill's echo")
	require.Contains(t, results[0].body["snapshot"], `textbox "Scratch" = "{{password}}"`)
	results = toolResults(t, reqs[3])
	require.Contains(t, jsonText(t, results[0].body["rows"]), "Your password is {{password}} and your token [redacted].")
	require.Contains(t, latestSnapshot(t, reqs[4]), "/next?pw={{password}}")

	steps := sink.steps()
	require.Equal(t, ls.URL+"/next?pw={{password}}", steps[3].URL, "a step's URL")
	requireRecordClean(t, testPassword, reqs, sink, res)
	requireRecordClean(t, "hdr-token-123456", reqs, sink, res)
}

func TestSecretsOnlyTypedOnTheirDomains(t *testing.T) {
	t.Parallel()
	// The run may visit both hosts; the login is for 127.0.0.1 only, and
	// the same form served as localhost asks for it.
	phish := newLoginServer(t, nil)
	start := strings.Replace(phish.URL, "127.0.0.1", "localhost", 1) + "/login"
	m := llm.NewScripted("controller",
		fillTurn(t, "Username", "{{username}}"),
		fillTurn(t, "Password", "{{password}}"),
		llm.Reply("I type it key by key.", llm.Call(ToolType, map[string]any{"text": "{{password}}", "reasoning": "type", "confidence": 0.9})),
		clickTurn(t, "button", "Sign in"),
		completeTurn("failed", "the login is not for this site"))
	p := Params{
		Goal: "Sign in", StartURL: start, Policy: hostsPolicy{"127.0.0.1", "localhost"},
		Controller: m, Page: browser.PageOptions{Width: 640, Height: 400},
		Secrets: loginSecrets("127.0.0.1"),
		// A prompt of the caller's that leaves the guidance out: the
		// model is told in the opening message instead.
		ControllerPrompt: "You drive a browser. Goal: {{.Goal}}",
	}
	res, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)

	posts := phish.received()
	require.Len(t, posts, 1, "the form was submitted, empty")
	require.Empty(t, posts[0].Get("username"))
	require.Empty(t, posts[0].Get("password"))

	reqs := m.Requests()
	require.NotContains(t, reqs[0].System, "{{password}}")
	require.Contains(t, messageText(reqs[0].Messages[0]), "{{password}}: password of the test login (on 127.0.0.1)")
	steps := sink.steps()
	for i, a := range []Action{steps[0].Actions[1], steps[1].Actions[0], steps[2].Actions[0]} {
		require.Equal(t, CodeSecretNotAllowed, a.Outcome, "action %d: %s", i, a.Message)
		require.Contains(t, a.Message, "may only be typed on 127.0.0.1, and this page is on localhost", "action %d", i)
	}
	results := toolResults(t, reqs[2])
	require.Equal(t, CodeSecretNotAllowed, results[0].body["error"])
	requireRecordClean(t, testPassword, reqs, sink, res)
}

func TestRedactor(t *testing.T) {
	t.Parallel()
	r := NewRedactor([]Secret{
		{Name: "password", Value: testPassword},
		{Name: "pin", Value: "123"}, // too short to look for
		{Name: "long", Value: "abcdefgh"},
		{Name: "short", Value: "abcd"},
		{Name: "pass", Value: "pass"}, // inside its own and another placeholder
	}, []string{"tok-99999", ""})
	require.True(t, r.Active())
	for _, tc := range []struct{ in, want string }{
		{"pw " + testPassword + ".", "pw {{password}}."},
		{"q=" + url.QueryEscape(testPassword), "q={{password}}"},
		{"/p/" + url.PathEscape(testPassword), "/p/{{password}}"},
		{html.EscapeString(testPassword), "{{password}}"},
		{base64.StdEncoding.EncodeToString([]byte(testPassword)), "{{password}}"},
		{base64.RawURLEncoding.EncodeToString([]byte(testPassword)), "{{password}}"},
		{jsonText(t, map[string]string{"v": testPassword}), `{"v":"{{password}}"}`},
		{"abcdefgh abcd", "{{long}} {{short}}"}, // longest first
		{"pin 123", "pin 123"},
		{"Bearer tok-99999", "Bearer [redacted]"},
		{"{{pass}} {{password}} [redacted] pass", "{{pass}} {{password}} [redacted] {{pass}}"},
	} {
		got := r.String(tc.in)
		require.Equal(t, tc.want, got, "redact %q", tc.in)
		require.Equal(t, got, r.String(got), "redacting twice changes nothing")
	}
	var none *Redactor
	require.False(t, none.Active())
	require.Equal(t, "x", none.String("x"))
	require.False(t, NewRedactor(nil, []string{"", "ab"}).Active())

	// Structured values: copies are redacted, the originals kept.
	args := map[string]any{"value": testPassword, "list": []any{"x " + testPassword}, testPassword: 1.0}
	got := r.Map(args)
	require.Equal(t, map[string]any{"value": "{{password}}", "list": []any{"x {{password}}"}, "{{password}}": 1.0}, got)
	require.Equal(t, testPassword, args["value"])
	req := &llm.Request{System: "s " + testPassword, Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
		{Text: testPassword},
		{ToolCall: &llm.ToolCall{ID: "1", Name: "t", Arguments: json.RawMessage(jsonText(t, map[string]string{"value": testPassword}))}},
		{ToolResult: &llm.ToolResult{CallID: "1", Content: jsonText(t, map[string]string{"value": testPassword})}},
	}}}, Observation: &llm.Observation{Text: testPassword, Elements: []llm.ObservedElement{{Value: testPassword, Options: []string{testPassword}}}}}
	red := r.Request(req)
	requireNoLeak(t, testPassword, "redacted request", jsonText(t, red)+jsonText(t, red.Observation))
	require.Contains(t, jsonText(t, req), `Tr0ub\"4dor`, "the original is untouched")

	err := r.err(fmt.Errorf("wrapped: %w", &llm.Error{Class: llm.ErrAuth, Provider: "p", Message: "bad " + testPassword}))
	require.NotContains(t, err.Error(), testPassword)
	require.ErrorIs(t, err, llm.ErrAuth)

	v := r.Verdict(&judge.Verdict{Reason: testPassword})
	require.Equal(t, "{{password}}", v.Reason)
}

func TestSecretsSubstitute(t *testing.T) {
	t.Parallel()
	sec, err := compileSecrets([]Secret{
		{Name: "user", Value: "alice", Domains: []string{"example.com"}},
		{Name: "pw", Value: "s3cret!", Domains: []string{"*.example.com", "127.0.0.1"}},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		value, page, want, code string
	}{
		{"{{user}}", "https://example.com/login", "alice", ""},
		{"{{user}}@corp {{pw}}", "https://example.com/", "", CodeSecretNotAllowed}, // pw is not for example.com itself
		{"{{pw}}", "https://app.example.com/login", "s3cret!", ""},
		{"{{ PW }}", "http://127.0.0.1:8080/", "s3cret!", ""},
		{"{{pw}}", "https://example.com.evil.test/", "", CodeSecretNotAllowed},
		{"{{user}}", "about:blank", "", CodeSecretNotAllowed},
		{"{{user}}", "file:///etc/passwd", "", CodeSecretNotAllowed},
		{"{{nobody}}", "https://example.com/", "", "invalid_params"},
		{"plain text {not a placeholder}", "https://evil.test/", "plain text {not a placeholder}", ""},
	} {
		got, _, refused := sec.substitute(tc.value, tc.page)
		if tc.code != "" {
			require.NotNil(t, refused, "%q on %s", tc.value, tc.page)
			require.Equal(t, tc.code, refused.code)
			require.NotContains(t, refused.msg, "s3cret!")
			require.NotContains(t, refused.msg, "alice")
			continue
		}
		require.Nil(t, refused, "%q on %s: %+v", tc.value, tc.page, refused)
		require.Equal(t, tc.want, got)
	}

	for _, bad := range [][]Secret{
		{{Name: "Bad Name", Value: "v", Domains: []string{"*"}}},
		{{Name: "a", Value: "v", Domains: []string{"*"}}, {Name: "a", Value: "w", Domains: []string{"*"}}},
		{{Name: "a", Value: "", Domains: []string{"*"}}},
		{{Name: "a", Value: "v"}},
		{{Name: "a", Value: "v", Domains: []string{"https://example.com"}}},
	} {
		_, err := compileSecrets(bad)
		require.Error(t, err, "%+v", bad)
	}
	var nilSecrets *secrets
	got, used, refused := nilSecrets.substitute("{{user}}", "https://example.com")
	require.Equal(t, "{{user}}", got)
	require.False(t, used)
	require.Nil(t, refused)
}

func TestSecretsInvalidEndTheRunBeforeItStarts(t *testing.T) {
	t.Parallel()
	m := llm.NewScripted("controller")
	r := &Runner{}
	res, err := r.Run(context.Background(), nil, Params{Controller: m, Secrets: []Secret{{Name: "pw", Value: "hunter22", Domains: []string{"bad/path"}}}}, &recordingSink{})
	require.NoError(t, err)
	require.Equal(t, StatusError, res.Status)
	require.Equal(t, CategoryInternal, res.Err.Category)
	require.NotContains(t, res.Err.Message, "hunter22")
	require.Empty(t, m.Requests())
}

// TestRedactorAdd: values learnt during a run (an OAuth token acquired on
// the way) are redacted from then on, with the ones known at the start.
func TestRedactorAdd(t *testing.T) {
	t.Parallel()
	r := NewRedactor(nil, nil)
	require.False(t, r.Active())
	require.Equal(t, "token tok-1234567", r.String("token tok-1234567"))
	r.Add("tok-1234567", "")
	require.True(t, r.Active())
	require.Equal(t, "token [redacted]", r.String("token tok-1234567"))

	r = NewRedactor([]Secret{{Name: "password", Value: "hunter2-pw", Domains: []string{"*"}}}, nil)
	r.Add("acquired-token-1")
	r.Add("acquired-token-1") // again: no change
	require.Equal(t, "{{password}} [redacted]", r.String("hunter2-pw acquired-token-1"))
	var nilRedactor *Redactor
	nilRedactor.Add("x-value") // a nil Redactor ignores Add
}

// BenchmarkRedactSnapshot: the cost of redacting one observation's text
// (a 20 KB snapshot) with a form login and three other secret values, each
// searched in its nine encodings.
func BenchmarkRedactSnapshot(b *testing.B) {
	r := NewRedactor([]Secret{
		{Name: "username", Value: "alice@example.com", Domains: []string{"*"}},
		{Name: "password", Value: "correct-horse-battery", Domains: []string{"*"}},
	}, []string{"tok-0123456789abcdef", "sk-live-abcdefghijklmnop", "sess=9f8e7d6c5b4a"})
	line := `- @e12 textbox "Email address" value="" [focusable] context: Sign in to continue to your account dashboard` + "\n"
	snapshot := strings.Repeat(line, 20000/len(line))
	b.SetBytes(int64(len(snapshot)))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(snapshot)
	}
}
