package worker

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/governance"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/netguard"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// TestMain stops the package's shared Postgres and Chromium.
func TestMain(m *testing.M) {
	storetest.Main(runAndClosePool{m})
}

type runAndClosePool struct{ m *testing.M }

func (r runAndClosePool) Run() int {
	code := r.m.Run()
	if testPool.pool != nil {
		testPool.pool.Close()
		_ = os.RemoveAll(testPool.dir)
	}
	return code
}

// testPool is one Chromium process for the package's tests, so that runs
// one after another get contexts of the same browser.
var testPool struct {
	once sync.Once
	pool *pool.Pool
	dir  string
	err  error
}

func sharedPool(t *testing.T) *pool.Pool {
	t.Helper()
	testPool.once.Do(func() {
		if testPool.dir, testPool.err = os.MkdirTemp("", "worker-test-"); testPool.err != nil {
			return
		}
		testPool.pool, testPool.err = pool.New(pool.Config{Capacity: 4, ContextsPerProcess: 4,
			WorkDir: testPool.dir, HealthInterval: time.Hour, MemoryLimit: -1})
		if testPool.err == nil {
			testPool.err = testPool.pool.Start(context.Background())
		}
	})
	require.NoError(t, testPool.err)
	return testPool.pool
}

// govBundle is a worker with a store, a keyring and the shared pool.
type govBundle struct {
	w     *Worker
	store *store.Store
	log   *slog.Logger
}

func newGovBundle(t *testing.T, keyring *secrets.Keyring) *govBundle {
	t.Helper()
	st := store.New(storetest.NewPool(t))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := New(Config{Store: st, Pool: sharedPool(t), Keyring: keyring, AllowPrivateNetworks: true, Logger: log,
		Governance: governance.New(governance.Config{})})
	return &govBundle{w: w, store: st, log: log}
}

// govRun is one run's side: its env, hooks and live browser context.
type govRun struct {
	env   *runEnv
	hooks runner.Hooks
	page  *browser.Page
}

// start creates a run with params, builds its governance hooks, and leases
// its browser context behind its own network guard, as execute does.
func (tb *govBundle) start(t *testing.T, params *wfv1.RunParams) *govRun {
	t.Helper()
	ctx := context.Background()
	run, _, err := tb.store.CreateRun(ctx, store.NewRun{Params: params},
		func(context.Context, pgx.Tx, string) (int64, error) { return 1, nil })
	require.NoError(t, err)
	run.Params = params
	policy, err := guard.New(params.GetAllowedDomains(), params.GetBlockedDomains(), true)
	require.NoError(t, err)
	blocks := netguard.NewLog(0, nil)
	proxy, err := netguard.Start(netguard.Config{Policy: policy, Log: blocks})
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	b := &leasedBrowser{pool: tb.w.cfg.Pool, proxy: proxy.URL(), blocks: blocks, log: tb.log}
	env := &runEnv{run: run, tenant: run.GetTenantId(), b: b, store: tb.store, log: tb.log}
	hooks, err := tb.w.governanceHooks(ctx, env)
	require.NoError(t, err)
	require.NoError(t, b.start(ctx))
	t.Cleanup(b.close)
	page, err := b.Session().NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	return &govRun{env: env, hooks: hooks, page: page}
}

// visit opens url as the runner opens its start URL: hooks around it.
func (r *govRun) visit(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	act := browser.Action{Kind: browser.ActionNavigate, URL: url}
	require.NoError(t, r.hooks.BeforeAction(ctx, r.page, &act))
	res, err := r.page.Do(ctx, act)
	require.NoError(t, err)
	require.True(t, res.Success, "%v", res.Error)
	_, err = r.hooks.AfterAction(ctx, r.page, act, res)
	require.NoError(t, err)
}

// end runs the run's end-of-run work and releases its context.
func (r *govRun) end() {
	for _, f := range r.env.atEnd {
		f(context.Background())
	}
	r.env.b.close()
}

// text returns the page's text.
func (r *govRun) text(t *testing.T) string {
	t.Helper()
	res, err := r.page.Do(context.Background(), browser.Action{Kind: browser.ActionExtract,
		Extract: &browser.ExtractSpec{Rows: "body", Fields: map[string]string{"t": ""}}})
	require.NoError(t, err)
	require.True(t, res.Success, "%v", res.Error)
	return res.Rows[0]["t"]
}

func (r *govRun) cookies(t *testing.T) map[string]string {
	t.Helper()
	res, err := r.page.Do(context.Background(), browser.Action{Kind: browser.ActionGetCookies})
	require.NoError(t, err)
	out := map[string]string{}
	for _, c := range res.Cookies {
		out[c.Domain+"/"+c.Name] = c.Value
	}
	return out
}

// siteOn serves a site on a loopback address ("127.0.0.2") that sets a
// cookie (/set) and shows its cookies and localStorage (/show).
func siteOn(t *testing.T, addr, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr+":0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/set":
			http.SetCookie(w, &http.Cookie{Name: name + "_sid", Value: name + "-session", Path: "/", HttpOnly: true})
			http.SetCookie(w, &http.Cookie{Name: name + "_keep", Value: name + "-kept", Path: "/", MaxAge: 3600})
			_, _ = w.Write([]byte(`<!doctype html><p>set</p><script>localStorage.setItem("` + name + `_token", "` + name + `-ls");</script>`))
		case "/show":
			_, _ = w.Write([]byte(`<!doctype html><p id="v"></p><script>
				document.getElementById("v").textContent = "cookies=" + document.cookie + " ls=" + localStorage.getItem("` + name + `_token");
			</script>`))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func testKeyring(t *testing.T) *secrets.Keyring {
	t.Helper()
	kr, err := secrets.Parse("k1:" + strings.Repeat("ab", 32))
	require.NoError(t, err)
	return kr
}

func TestPersistentProfileRoundTrip(t *testing.T) {
	t.Parallel()
	tb := newGovBundle(t, testKeyring(t))
	a := siteOn(t, "127.0.0.1", "a")
	b := siteOn(t, "127.0.0.2", "b")
	withProfile := &wfv1.RunParams{Goal: "g", StartUrl: a + "/set", Browser: &wfv1.BrowserConfig{Profile: "main"}}

	// Run 1 picks up cookies and storage on two sites and saves them.
	r1 := tb.start(t, withProfile)
	r1.visit(t, a+"/set")
	r1.visit(t, b+"/set")
	r1.end()

	// Run 2 of the same profile starts with them.
	r2 := tb.start(t, withProfile)
	r2.visit(t, a+"/show")
	require.Contains(t, r2.text(t), "ls=a-ls")
	require.Contains(t, r2.text(t), "a_keep=a-kept")
	require.Equal(t, "a-session", r2.cookies(t)["127.0.0.1/a_sid"], "HttpOnly session cookies too")
	r2.visit(t, b+"/show")
	require.Contains(t, r2.text(t), "ls=b-ls")
	require.Contains(t, r2.text(t), "b_keep=b-kept")
	require.Equal(t, "b-session", r2.cookies(t)["127.0.0.2/b_sid"])
	r2.end()

	// A run without a profile sees none of it: its context is new and the
	// previous ones were disposed of.
	r3 := tb.start(t, &wfv1.RunParams{Goal: "g", StartUrl: a + "/show"})
	require.Empty(t, r3.cookies(t))
	r3.visit(t, a+"/show")
	require.Contains(t, r3.text(t), "cookies= ls=null")
	r3.end()

	// Nor does a run of another profile name.
	r4 := tb.start(t, &wfv1.RunParams{Goal: "g", StartUrl: a + "/show", Browser: &wfv1.BrowserConfig{Profile: "other"}})
	require.Empty(t, r4.cookies(t))
	r4.end()

	// What is stored is sealed: no value in the row.
	var sealed []byte
	require.NoError(t, tb.store.Pool().QueryRow(context.Background(),
		`SELECT sealed FROM browser_profiles WHERE tenant_id = 'default' AND name = 'main'`).Scan(&sealed))
	for _, v := range []string{"a-session", "a-kept", "a-ls", "b-ls"} {
		require.NotContains(t, string(sealed), v)
	}
}

func TestContextsAreDiscardedWithoutProfile(t *testing.T) {
	t.Parallel()
	tb := newGovBundle(t, testKeyring(t))
	a := siteOn(t, "127.0.0.1", "a")
	r1 := tb.start(t, &wfv1.RunParams{Goal: "g", StartUrl: a + "/set"})
	r1.visit(t, a+"/set")
	require.NotEmpty(t, r1.cookies(t))
	r1.end()
	r2 := tb.start(t, &wfv1.RunParams{Goal: "g", StartUrl: a + "/show"})
	require.Empty(t, r2.cookies(t))
	r2.visit(t, a+"/show")
	require.Contains(t, r2.text(t), "cookies= ls=null")
	r2.end()
	var n int
	require.NoError(t, tb.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM browser_profiles`).Scan(&n))
	require.Zero(t, n, "nothing saved without a profile")
}

func TestProfileNeedsKeyring(t *testing.T) {
	t.Parallel()
	tb := newGovBundle(t, nil)
	ctx := context.Background()
	params := &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com/", Browser: &wfv1.BrowserConfig{Profile: "main"}}
	run, _, err := tb.store.CreateRun(ctx, store.NewRun{Params: params}, func(context.Context, pgx.Tx, string) (int64, error) { return 1, nil })
	require.NoError(t, err)
	env := &runEnv{run: run, tenant: run.GetTenantId(), b: &leasedBrowser{proxy: "http://127.0.0.1:1"}, store: tb.store, log: tb.log}
	_, err = tb.w.governanceHooks(ctx, env)
	var re *runner.Error
	require.ErrorAs(t, err, &re)
	require.Contains(t, re.Message, "encryption key")
}

func TestUnopenableProfileStartsEmpty(t *testing.T) {
	t.Parallel()
	tb := newGovBundle(t, testKeyring(t))
	other, err := secrets.Parse("k2:" + strings.Repeat("cd", 32))
	require.NoError(t, err)
	require.NoError(t, tb.store.SaveBrowserProfile(context.Background(), other, "default", "main", []byte(`{"cookies":[{"name":"x","value":"y","domain":"127.0.0.1"}]}`)))
	a := siteOn(t, "127.0.0.1", "a")
	r := tb.start(t, &wfv1.RunParams{Goal: "g", StartUrl: a + "/show", Browser: &wfv1.BrowserConfig{Profile: "main"}})
	require.Empty(t, r.cookies(t))
	evs, err := tb.store.ListEvents(context.Background(), r.env.run.GetId(), 0, 100)
	require.NoError(t, err)
	require.True(t, hasEvent(evs, wfv1.RunEventType_RUN_EVENT_TYPE_POLICY, "cannot be opened"))
	r.visit(t, a+"/set")
	r.end()
	// Saved anew under the current key.
	_, err = tb.store.LoadBrowserProfile(context.Background(), testKeyring(t), "default", "main")
	require.NoError(t, err)
}

func hasEvent(evs []*wfv1.RunEvent, typ wfv1.RunEventType, text string) bool {
	for _, ev := range evs {
		if ev.Type == typ && strings.Contains(ev.Message, text) {
			return true
		}
	}
	return false
}

func TestRobotsThroughTheRunsGuard(t *testing.T) {
	t.Parallel()
	tb := newGovBundle(t, testKeyring(t))
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("User-agent: *\nDisallow: /private\n"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<p>ok</p>")) })
	site := httptest.NewServer(mux)
	t.Cleanup(site.Close)

	r := tb.start(t, &wfv1.RunParams{Goal: "g", StartUrl: site.URL + "/",
		Governance: &wfv1.GovernanceConfig{RespectRobotsTxt: true, Consent: wfv1.ConsentPolicy_CONSENT_POLICY_AUTO}})
	ctx := context.Background()
	r.visit(t, site.URL+"/")
	err := r.hooks.BeforeAction(ctx, r.page, &browser.Action{Kind: browser.ActionNavigate, URL: site.URL + "/private/x"})
	var ref *runner.Refusal
	require.ErrorAs(t, err, &ref)
	require.Equal(t, "domain_blocked", ref.Code)
	r.end()

	evs, err := tb.store.ListEvents(ctx, r.env.run.GetId(), 0, 100)
	require.NoError(t, err)
	require.True(t, hasEvent(evs, wfv1.RunEventType_RUN_EVENT_TYPE_POLICY, "robots.txt disallows"))
	audit, _, err := tb.store.ListAudit(ctx, store.AuditFilter{Tenant: "default", Kind: store.AuditPolicyBlocked, PageSize: 10})
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, r.env.run.GetId(), audit[0].RunId)
	require.Equal(t, "127.0.0.1", audit[0].Subject)
	require.Equal(t, "robots_disallowed", audit[0].Details.AsMap()["rule"])

	// A run whose domain policy does not allow the site is refused by the
	// guard, not by robots.txt, and its robots.txt is not fetched.
	r2 := tb.start(t, &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com/", AllowedDomains: []string{"example.com"},
		Governance: &wfv1.GovernanceConfig{RespectRobotsTxt: true}})
	require.NoError(t, r2.hooks.BeforeAction(ctx, r2.page, &browser.Action{Kind: browser.ActionNavigate, URL: site.URL + "/private/x"}))
	r2.end()
}

func TestTenantSiteProfilesReachTheRun(t *testing.T) {
	t.Parallel()
	tb := newGovBundle(t, testKeyring(t))
	ctx := context.Background()
	_, err := tb.store.PutSiteProfile(ctx, "default", &wfv1.SiteProfile{Domain: "127.0.0.1", Notes: "tenant hint"})
	require.NoError(t, err)
	a := siteOn(t, "127.0.0.1", "a")
	r := tb.start(t, &wfv1.RunParams{Goal: "g", StartUrl: a + "/show"})
	act := browser.Action{Kind: browser.ActionNavigate, URL: a + "/show"}
	res, err := r.page.Do(ctx, act)
	require.NoError(t, err)
	hr, err := r.hooks.AfterAction(ctx, r.page, act, res)
	require.NoError(t, err)
	require.Equal(t, []string{"Site profile for 127.0.0.1. Notes: tenant hint"}, hr.Notes)
	r.end()
}
