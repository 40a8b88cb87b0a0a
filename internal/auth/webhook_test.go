package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// callerReport is what the webhook's "own automation code" saw.
type callerReport struct {
	req       WebhookRequest
	secret    string   // the X-Hook-Secret header
	targets   []string // target ids Target.getTargets listed
	wrongPath int      // status of the endpoint under another path
	// Refusals of what lies outside the run's context.
	attachOther, closeBrowser, newContext, closeRunPage, otherContextID error
	login                                                               error
}

// hookServer is a login webhook whose handler logs in to s over the CDP
// endpoint with rod, as a caller's code would; other is a target of
// another browser context it must not reach.
type hookServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	reports []callerReport
	status  int
	delay   time.Duration
}

func newHookServer(t *testing.T, s *site, other string) *hookServer {
	t.Helper()
	h := &hookServer{status: http.StatusOK}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep callerReport
		if err := json.NewDecoder(r.Body).Decode(&rep.req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rep.secret = r.Header.Get("X-Hook-Secret")
		h.mu.Lock()
		status, delay := h.status, h.delay
		h.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if status == http.StatusOK {
			caller(r.Context(), &rep, s, other)
		}
		h.mu.Lock()
		h.reports = append(h.reports, rep)
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookServer) got() []callerReport {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.reports)
}

// caller is the webhook's automation code: rod over the CDP URL.
func caller(ctx context.Context, rep *callerReport, s *site, other string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	wrong := strings.Replace(strings.Replace(rep.req.CDPURL, "ws://", "http://", 1), "/cdp/", "/cdp/x", 1)
	if resp, err := http.Get(wrong); err == nil {
		rep.wrongPath = resp.StatusCode
		_ = resp.Body.Close()
	}
	b := rod.New().Context(ctx).ControlURL(rep.req.CDPURL)
	if rep.login = b.Connect(); rep.login != nil {
		return
	}
	list, err := proto.TargetGetTargets{}.Call(b)
	if rep.login = err; err != nil {
		return
	}
	for _, ti := range list.TargetInfos {
		rep.targets = append(rep.targets, string(ti.TargetID))
	}
	_, rep.attachOther = b.PageFromTarget(proto.TargetTargetID(other))
	rep.closeBrowser = proto.BrowserClose{}.Call(b)
	_, rep.newContext = proto.TargetCreateBrowserContext{}.Call(b)
	_, rep.closeRunPage = proto.TargetCloseTarget{TargetID: proto.TargetTargetID(rep.req.TargetID)}.Call(b)
	_, rep.otherContextID = proto.TargetCreateTarget{URL: "about:blank", BrowserContextID: "not-the-runs"}.Call(b)

	p, err := b.PageFromTarget(proto.TargetTargetID(rep.req.TargetID))
	if rep.login = err; err != nil {
		return
	}
	rep.login = func() error {
		if err := p.Navigate(s.at("app.test", "/login")); err != nil {
			return err
		}
		if err := p.WaitLoad(); err != nil {
			return err
		}
		for sel, v := range map[string]string{"#user": testUser, "#pass": testPassword} {
			el, err := p.Element(sel)
			if err != nil {
				return err
			}
			if err := el.Input(v); err != nil {
				return err
			}
		}
		btn, err := p.Element("#submit")
		if err != nil {
			return err
		}
		if err := btn.Click(proto.InputMouseButtonLeft, 1); err != nil {
			return err
		}
		_, err = p.Element("#welcome")
		return err
	}()
}

func TestWebhookCallbackWithConfinedCDP(t *testing.T) {
	t.Parallel()
	s, logins := loginSite(t)

	// Another run's context in the same Chromium process, on a page of
	// its own.
	otherSession := newContext(t, nil)
	otherPage, err := otherSession.NewPage(context.Background(), browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, otherPage.Navigate(context.Background(), s.at("other.test", "/private"), 20*time.Second))

	hook := newHookServer(t, s, otherPage.TargetID())
	r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"app.test"}, Credential: "sso",
		Method: &Callback{Webhook: &Webhook{URL: hook.srv.URL, Headers: map[string]string{"X-Hook-Secret": "hook-secret-123"}}}}}},
		Options{RunID: "run-42"})

	hr := r.mustVisit(t, s.at("app.test", "/dashboard"))
	require.True(t, hr.Changed)
	require.Equal(t, "dashboard alice", r.title(t))
	require.EqualValues(t, 1, logins.Load())

	reps := hook.got()
	require.Len(t, reps, 1)
	rep := reps[0]
	require.NoError(t, rep.login)
	require.Equal(t, "run-42", rep.req.RunID)
	require.Equal(t, "app.test", rep.req.Domain)
	require.Equal(t, r.page.TargetID(), rep.req.TargetID)
	require.Equal(t, r.page.ContextID(), rep.req.BrowserContextID)
	require.WithinDuration(t, time.Now().Add(DefaultWebhookTimeout), rep.req.ExpiresAt, 30*time.Second)
	require.True(t, strings.HasPrefix(rep.req.CDPURL, "ws://127.0.0.1:"), rep.req.CDPURL)
	require.Equal(t, "hook-secret-123", rep.secret)
	require.Equal(t, http.StatusNotFound, rep.wrongPath)

	require.Contains(t, rep.targets, rep.req.TargetID)
	require.NotContains(t, rep.targets, otherPage.TargetID(), "another context's page is visible")
	for name, err := range map[string]error{"attach to another context's page": rep.attachOther,
		"Browser.close": rep.closeBrowser, "Target.createBrowserContext": rep.newContext,
		"closing the run's page": rep.closeRunPage, "a page in another context": rep.otherContextID} {
		require.Error(t, err, name)
	}
	// The other context's page went on untouched.
	u, _, err := otherPage.Location(context.Background())
	require.NoError(t, err)
	require.Equal(t, s.at("other.test", "/private"), u)

	// The endpoint is gone once the webhook answered.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.Error(t, rod.New().Context(ctx).ControlURL(rep.req.CDPURL).Connect())

	require.Equal(t, []Applied{{Domain: "app.test", Method: KindWebhook, Credential: "sso"}}, r.appliedEvents())
	require.Contains(t, r.auth.Redact(), "hook-secret-123")
}

func TestGlobalWebhookCallback(t *testing.T) {
	t.Parallel()
	s, logins := loginSite(t)
	hook := newHookServer(t, s, "no-such-target")
	r := newRun(t, Config{Global: &Callback{Webhook: &Webhook{URL: hook.srv.URL, Timeout: 90 * time.Second}}}, Options{})

	r.mustVisit(t, s.at("app.test", "/dashboard"))
	require.Equal(t, "dashboard alice", r.title(t))
	require.EqualValues(t, 1, logins.Load())
	reps := hook.got()
	require.Len(t, reps, 1)
	require.NoError(t, reps[0].login)
	require.Empty(t, reps[0].req.Domain)
	require.WithinDuration(t, time.Now().Add(90*time.Second), reps[0].req.ExpiresAt, 30*time.Second)
}

func TestWebhookFailures(t *testing.T) {
	t.Parallel()
	s, _ := loginSite(t)
	cases := []struct {
		name    string
		status  int
		delay   time.Duration
		timeout time.Duration
		want    string
	}{
		{"error answer", http.StatusInternalServerError, 0, 0, "answered HTTP 500"},
		{"no answer in time", http.StatusOK, time.Minute, time.Second, "did not answer within 1s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hook := newHookServer(t, s, "")
			hook.status, hook.delay = tc.status, tc.delay
			r := newRun(t, Config{Bindings: []Binding{{Domains: []string{"app.test"}, Method: &Callback{Webhook: &Webhook{
				URL: hook.srv.URL, Headers: map[string]string{"Authorization": "Bearer hook-token-77"}, Timeout: tc.timeout}}}}}, Options{})
			_, err := r.visit(t, s.at("app.test", "/dashboard"))
			re := authError(t, err)
			require.Contains(t, re.Message, tc.want)
			requireNoSecret(t, re.Message, "hook-token-77")
			require.False(t, errors.Is(err, context.DeadlineExceeded))
		})
	}
}
