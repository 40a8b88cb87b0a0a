package governance

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/runner"
)

func allowPrivate(t *testing.T) *guard.Policy {
	t.Helper()
	p, err := guard.New(nil, nil, true)
	require.NoError(t, err)
	return p
}

func navigate(u string) *browser.Action {
	return &browser.Action{Kind: browser.ActionNavigate, URL: u}
}

// requireRefused checks err is a domain_blocked refusal mentioning want.
func requireRefused(t *testing.T, err error, want string) {
	t.Helper()
	var ref *runner.Refusal
	require.ErrorAs(t, err, &ref)
	require.Equal(t, string(browser.CodeDomainBlocked), ref.Code)
	require.Contains(t, ref.Message, want)
}

func TestRobotsBeforeNavigation(t *testing.T) {
	t.Parallel()
	allowing := serve(t, map[string]string{"/robots.txt": "User-agent: *\nDisallow: /private\nAllow: /private/ok\n\nUser-agent: Wayfinder\nDisallow: /no-wayfinder\nDisallow: /private\nAllow: /private/ok\n"})
	missing := serve(t, map[string]string{"/": "<p>home</p>"}) // robots.txt is a 404
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()

	var rep reports
	g := New(Config{})
	run := g.Run(RunConfig{Settings: &wfv1.GovernanceConfig{RespectRobotsTxt: true},
		Policy: allowPrivate(t), Client: http.DefaultClient, Report: rep.add})
	ctx := context.Background()
	for _, tc := range []struct {
		url  string
		want string // "" allowed, else the refusal's text
	}{
		{allowing + "/", ""},
		{allowing + "/public?q=1", ""},
		{allowing + "/private/x", "robots.txt disallows " + allowing + "/private/x"},
		{allowing + "/private/ok/x", ""},
		{allowing + "/no-wayfinder", "robots.txt disallows"},
		{missing + "/anything", ""},
		{failing.URL + "/", "server error"},
		{gone.URL + "/", "could not be fetched"},
		{"about:blank", ""},
	} {
		err := run.BeforeAction(ctx, nil, navigate(tc.url))
		if tc.want == "" {
			require.NoError(t, err, tc.url)
			continue
		}
		requireRefused(t, err, tc.want)
	}
	kinds := rep.kinds()
	require.Len(t, kinds, 4)
	for _, r := range rep.all {
		require.Equal(t, ReportRobotsDisallowed, r.Kind)
		require.True(t, r.Blocked)
		require.Equal(t, "127.0.0.1", r.Domain)
	}

	// Without respect_robots_txt nothing is fetched or refused.
	free := g.Run(RunConfig{Settings: &wfv1.GovernanceConfig{}, Policy: allowPrivate(t), Client: http.DefaultClient})
	require.NoError(t, free.BeforeAction(ctx, nil, navigate(allowing+"/private/x")))
}

func TestRobotsNotFetchedForBlockedDomains(t *testing.T) {
	t.Parallel()
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		_, _ = w.Write([]byte("User-agent: *\nDisallow: /"))
	}))
	t.Cleanup(srv.Close)
	strict, err := guard.New([]string{"example.com"}, nil, false)
	require.NoError(t, err)
	run := New(Config{}).Run(RunConfig{Settings: &wfv1.GovernanceConfig{RespectRobotsTxt: true},
		Policy: strict, Client: http.DefaultClient})
	// The domain policy refuses it (with its own reason); robots.txt is not
	// asked.
	require.NoError(t, run.BeforeAction(context.Background(), nil, navigate(srv.URL+"/x")))
	require.Zero(t, fetched.Load())
}

func TestRobotsFetchThroughGuardRefusal(t *testing.T) {
	t.Parallel()
	// A proxy that answers as the network guard does when it refuses.
	guardProxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(blockedHeader, "private_network")
		http.Error(w, "wayfinder network guard: refused", http.StatusForbidden)
	}))
	t.Cleanup(guardProxy.Close)
	proxyURL, err := url.Parse(guardProxy.URL)
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	g := New(Config{})
	run := g.Run(RunConfig{Settings: &wfv1.GovernanceConfig{RespectRobotsTxt: true}, Policy: allowPrivate(t), Client: client})
	require.NoError(t, run.BeforeAction(context.Background(), nil, navigate("http://site.example/x")))
	g.robots.mu.Lock()
	defer g.robots.mu.Unlock()
	require.Empty(t, g.robots.entries, "a refusal by the guard is not cached as the site's answer")
}

func TestRobotsAfterLanding(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{
		"/robots.txt": "User-agent: *\nDisallow: /secret\n",
		"/":           `<!doctype html><a href="/secret">in</a>`,
		"/secret":     `<!doctype html><h1>Secret</h1><button>Do</button>`,
	})
	var rep reports
	run := New(Config{}).Run(RunConfig{Settings: &wfv1.GovernanceConfig{RespectRobotsTxt: true},
		Policy: allowPrivate(t), Client: http.DefaultClient, Report: rep.add})
	ctx := context.Background()
	page := openPage(t, base+"/")
	_, err := run.AfterAction(ctx, page, *navigate(base + "/"), nil)
	require.NoError(t, err)

	click := browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Text: "in"}}
	require.NoError(t, run.BeforeAction(ctx, page, &click), "clicking on an allowed page")
	res, err := page.Do(ctx, click)
	require.NoError(t, err)
	require.True(t, res.Navigated)
	hr, err := run.AfterAction(ctx, page, click, res)
	require.NoError(t, err)
	require.Contains(t, strings.Join(hr.Notes, "\n"), "robots.txt disallows "+base+"/secret")
	require.Equal(t, []ReportKind{ReportRobotsDisallowed}, rep.kinds())

	// On the disallowed page only leaving is allowed.
	requireRefused(t, run.BeforeAction(ctx, page, &browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Text: "Do"}}), "Only leaving this page")
	requireRefused(t, run.BeforeAction(ctx, page, &browser.Action{Kind: browser.ActionExtract}), "Only leaving")
	for _, kind := range []browser.ActionKind{browser.ActionBack, browser.ActionScroll, browser.ActionScreenshot, browser.ActionSwitchTab} {
		require.NoError(t, run.BeforeAction(ctx, page, &browser.Action{Kind: kind}), kind)
	}
	require.NoError(t, run.BeforeAction(ctx, page, navigate(base+"/")))
}

func TestRateLimitHooks(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": `<!doctype html><button>b</button>`})
	ctx := context.Background()
	page := openPage(t, base+"/")
	click := &browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Text: "b"}}

	for _, tc := range []struct {
		name     string
		server   int
		run      int32
		profile  *wfv1.SiteProfile
		wantWait []time.Duration // of: navigate, click, screenshot, click
	}{
		{name: "none", wantWait: nil},
		{name: "server default", server: 30, wantWait: []time.Duration{2 * time.Second, 2 * time.Second}},
		{name: "profile over server", server: 30, profile: &wfv1.SiteProfile{Domain: "127.0.0.1", MaxActionsPerMinute: 60},
			wantWait: []time.Duration{time.Second, time.Second}},
		{name: "run over profile", server: 30, run: 120, profile: &wfv1.SiteProfile{Domain: "127.0.0.1", MaxActionsPerMinute: 60},
			wantWait: []time.Duration{500 * time.Millisecond, 500 * time.Millisecond}},
		{name: "polite delay", profile: &wfv1.SiteProfile{Domain: "*.example.com", PoliteDelay: durationpb.New(3 * time.Second)},
			wantWait: nil}, // the profile is not this host's
		{name: "polite delay of the host", profile: &wfv1.SiteProfile{Domain: "127.0.0.1", PoliteDelay: durationpb.New(3 * time.Second)},
			wantWait: []time.Duration{3 * time.Second, 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			var server *Profiles
			if tc.profile != nil {
				server = mustProfiles(t, tc.profile)
			}
			g := New(Config{DefaultRate: tc.server, Profiles: server})
			g.limiter = clock.limiter()
			var rep reports
			run := g.Run(RunConfig{Settings: &wfv1.GovernanceConfig{MaxActionsPerMinute: tc.run}, Report: rep.add})
			for _, act := range []*browser.Action{navigate(base + "/"), click, {Kind: browser.ActionScreenshot}, click} {
				require.NoError(t, run.BeforeAction(ctx, page, act))
				_, err := run.AfterAction(ctx, nil, *act, &browser.ActionResult{URL: base + "/"})
				require.NoError(t, err)
			}
			require.Equal(t, tc.wantWait, clock.waits, "the screenshot is not paced")
			if len(tc.wantWait) > 0 && tc.wantWait[0] >= time.Second {
				require.Equal(t, []ReportKind{ReportRateLimited}, rep.kinds(), "reported once per domain")
			} else {
				require.Empty(t, rep.kinds())
			}
		})
	}
}

func TestRateLimitSharedAcrossRuns(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	g := New(Config{DefaultRate: 60})
	g.limiter = clock.limiter()
	a := g.Run(RunConfig{})
	b := g.Run(RunConfig{})
	ctx := context.Background()
	require.NoError(t, a.BeforeAction(ctx, nil, navigate("https://www.example.com/a")))
	require.NoError(t, b.BeforeAction(ctx, nil, navigate("https://shop.example.com/b")))
	require.NoError(t, b.BeforeAction(ctx, nil, navigate("https://other.example/")))
	require.Equal(t, []time.Duration{time.Second}, clock.waits, "one domain, two runs: spaced; another domain: not")
}

func TestRateLimitWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	g := New(Config{DefaultRate: 1}) // real clock: a minute between actions
	run := g.Run(RunConfig{})
	require.NoError(t, run.BeforeAction(context.Background(), nil, navigate("https://example.com/")))
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("cancelled")
	go func() { time.Sleep(20 * time.Millisecond); cancel(stop) }()
	err := run.BeforeAction(ctx, nil, navigate("https://example.com/2"))
	require.ErrorIs(t, err, stop)
}

func TestProfileNotesOnFirstVisit(t *testing.T) {
	t.Parallel()
	server := mustProfiles(t, &wfv1.SiteProfile{Domain: "127.0.0.1", Notes: "server notes"})
	tenant := mustProfiles(t, &wfv1.SiteProfile{Domain: "127.0.0.1", Notes: "tenant notes", Selectors: map[string]string{"go": "#go"}})
	run := New(Config{Profiles: server}).Run(RunConfig{Profiles: tenant})
	ctx := context.Background()
	res := &browser.ActionResult{URL: "http://127.0.0.1:1234/a", Navigated: true}
	hr, err := run.AfterAction(ctx, nil, *navigate(res.URL), res)
	require.NoError(t, err)
	require.Equal(t, []string{"Site profile for 127.0.0.1. Known CSS selectors (usable as target.css): go: #go. Notes: tenant notes"}, hr.Notes)
	require.False(t, hr.Changed)
	hr, err = run.AfterAction(ctx, nil, *navigate(res.URL), &browser.ActionResult{URL: "http://127.0.0.1:1234/b", Navigated: true})
	require.NoError(t, err)
	require.Empty(t, hr.Notes, "told once")
	require.Equal(t, []string{"http://127.0.0.1:1234"}, run.Origins())
}
