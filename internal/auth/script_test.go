package auth

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

const (
	testUser     = "alice"
	testPassword = "pw-wonderland-42"
)

// loginSite serves a sign-in form on app.test/login that sets a session
// cookie for alice, and /dashboard, which needs it (401 without).
func loginSite(t *testing.T) (*site, *atomic.Int32) {
	t.Helper()
	s := newSite(t)
	var logins atomic.Int32
	s.handle("app.test/login", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if r.PostFormValue("user") == testUser && r.PostFormValue("pass") == testPassword {
				logins.Add(1)
				http.SetCookie(w, &http.Cookie{Name: "session", Value: "ok-alice", Path: "/"})
				html(w, http.StatusOK, `<!doctype html><title>signed in</title><p id="welcome">Welcome</p>`)
				return
			}
			html(w, http.StatusOK, `<!doctype html><title>sign in</title><p id="error">Wrong password</p>`)
			return
		}
		html(w, http.StatusOK, `<!doctype html><title>sign in</title>
			<form method="post" action="/login"><input id="user" name="user"><input id="pass" name="pass" type="password">
			<button id="submit">Sign in</button></form>`)
	})
	s.handle("app.test/dashboard", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("session"); err == nil && c.Value == "ok-alice" {
			html(w, http.StatusOK, `<!doctype html><title>dashboard alice</title>`)
			return
		}
		html(w, http.StatusUnauthorized, `<!doctype html><title>please sign in</title>`)
	})
	return s, &logins
}

// loginScript signs in to s as alice.
func loginScript(s *site, password string) *Script {
	return &Script{
		Steps: []Step{
			{Action: StepNavigate, URL: s.at("app.test", "/login")},
			{Action: StepFill, Selector: "#user", SecretRef: "username"},
			{Action: StepFill, Selector: "#pass", SecretRef: "password"},
			{Action: StepClick, Selector: "#submit"},
			{Action: StepWaitFor, Selector: "#welcome"},
		},
		Secrets: map[string]string{"username": testUser, "password": password},
	}
}

func TestGlobalLoginScript(t *testing.T) {
	t.Parallel()
	s, logins := loginSite(t)
	r := newRun(t, Config{Global: &Callback{Script: loginScript(s, testPassword)}, GlobalCredential: "alice-login"}, Options{})

	r.mustVisit(t, s.at("app.test", "/dashboard"))
	require.Equal(t, "dashboard alice", r.title(t))
	require.EqualValues(t, 1, logins.Load())
	require.Equal(t, []Applied{{Method: KindScript, Credential: "alice-login"}}, r.appliedEvents())

	r.mustVisit(t, s.at("app.test", "/dashboard"))
	require.EqualValues(t, 1, logins.Load(), "the global callback ran twice in one context")

	// A context that replaces a crashed one logs in again before its
	// first page.
	next := newContext(t, r.auth)
	page, err := next.NewPage(context.Background(), browser.PageOptions{})
	require.NoError(t, err)
	r.page = page
	r.mustVisit(t, s.at("app.test", "/dashboard"))
	require.Equal(t, "dashboard alice", r.title(t))
	require.EqualValues(t, 2, logins.Load())
}

func TestPerDomainLoginScript(t *testing.T) {
	t.Parallel()
	s, logins := loginSite(t)
	r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"app.test"},
		Method: &Callback{Script: loginScript(s, testPassword)}, Credential: "alice-login"}}}, Options{})

	r.mustVisit(t, s.at("other.test", "/home"))
	require.Zero(t, logins.Load(), "another domain ran the login")

	hr := r.mustVisit(t, s.at("app.test", "/dashboard"))
	require.True(t, hr.Changed)
	require.EqualValues(t, 1, logins.Load())
	require.Equal(t, "dashboard alice", r.title(t), "the page did not go back after the login")
	require.Equal(t, []Applied{{Domain: "app.test", Method: KindScript, Credential: "alice-login"}}, r.appliedEvents())

	hr = r.mustVisit(t, s.at("app.test", "/dashboard"))
	require.False(t, hr.Changed)
	require.EqualValues(t, 1, logins.Load(), "the login ran again on a later visit")
}

func TestLoginScriptFailures(t *testing.T) {
	t.Parallel()
	s, _ := loginSite(t)
	wrongSelector := loginScript(s, testPassword)
	wrongSelector.Steps[3].Selector = "#no-such-button"
	cases := []struct {
		name   string
		script *Script
		want   string
	}{
		{"wrong password", loginScript(s, "pw-not-the-one"), "step 5 (wait_for #welcome)"},
		{"missing element", wrongSelector, "step 4 (click #no-such-button)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"app.test"},
				Method: &Callback{Script: tc.script}, Credential: "alice-login"}}}, Options{StepTimeout: 2 * time.Second})
			_, err := r.visit(t, s.at("app.test", "/dashboard"))
			re := authError(t, err)
			require.Contains(t, re.Message, tc.want)
			require.Contains(t, re.Message, `login_script for app.test (credential "alice-login")`)
			requireNoSecret(t, re.Message, "pw-not-the-one", testPassword)
			require.Len(t, r.failures(), 1)
		})
	}
}
