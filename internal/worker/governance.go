package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/governance"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
)

// profileSaveTimeout bounds saving a persistent profile at the run's end.
const profileSaveTimeout = 30 * time.Second

// governanceHooks applies the run's governance rules: robots.txt,
// per-domain rate limits, site profiles and consent banners (a
// governance.Run sharing the worker's Governor), and its persistent
// browser profile, restored into the context's network rules now and
// saved when the run ends.
func (w *Worker) governanceHooks(ctx context.Context, env *runEnv) (runner.Hooks, error) {
	p := env.run.GetParams()
	g := w.cfg.Governance
	if g == nil {
		g = governance.New(governance.Config{})
	}
	stored, err := env.store.ListSiteProfiles(ctx, env.tenant)
	if err != nil {
		return nil, fmt.Errorf("load the tenant's site profiles: %w", err)
	}
	tenantProfiles, err := governance.NewProfiles(stored)
	if err != nil {
		// Validated when stored; never fatal to a run.
		env.log.WarnContext(ctx, "the tenant's site profiles are inconsistent; using none", "error", err)
		tenantProfiles = nil
	}
	cfg := governance.RunConfig{
		Settings: p.GetGovernance(),
		Profiles: tenantProfiles,
		// CONSENT_POLICY_ASK asks the run's human, like a checkpoint.
		Approve: askConsent,
		Report:  func(ctx context.Context, r governance.Report) { reportPolicy(ctx, env, r) },
	}
	if p.GetGovernance().GetRespectRobotsTxt() {
		if cfg.Policy, err = guard.New(p.GetAllowedDomains(), p.GetBlockedDomains(), w.cfg.AllowPrivateNetworks); err != nil {
			return nil, &runner.Error{Category: runner.CategoryDomainBlocked, Message: err.Error()}
		}
		client, closeClient, err := viaProxy(env.b.proxy)
		if err != nil {
			return nil, err
		}
		cfg.Client = client
		env.atEnd = append(env.atEnd, func(context.Context) { closeClient() })
	}
	run := g.Run(cfg)
	if name := p.GetBrowser().GetProfile(); name != "" {
		if err := w.restoreProfile(ctx, env, name); err != nil {
			return nil, err
		}
		env.atEnd = append(env.atEnd, func(ctx context.Context) { w.saveProfile(ctx, env, name, run) })
	}
	return run, nil
}

// viaProxy returns an HTTP client whose every request goes through the
// run's network guard proxy, so the server's own requests for the run
// (robots.txt) obey the run's domain policy like the browser's.
func viaProxy(proxy string) (*http.Client, func(), error) {
	u, err := url.Parse(proxy)
	if err == nil && u.Host == "" {
		err = errors.New("no host")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("the run's network guard address %q: %w", proxy, err)
	}
	t := &http.Transport{Proxy: http.ProxyURL(u), MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 10 * time.Second}
	return &http.Client{Transport: t}, t.CloseIdleConnections, nil
}

// reportPolicy records what a governance rule did as a POLICY event, and a
// refusal also in the tenant's audit log.
func reportPolicy(ctx context.Context, env *runEnv, r governance.Report) {
	env.event(ctx, &wfv1.RunEvent{
		Type:    wfv1.RunEventType_RUN_EVENT_TYPE_POLICY,
		Status:  wfv1.RunStatus_RUN_STATUS_RUNNING,
		Message: r.Message,
	})
	if r.Blocked {
		env.audit(ctx, store.Audit{Kind: store.AuditPolicyBlocked, Subject: r.Domain,
			Details: map[string]any{"rule": string(r.Kind), "url": r.URL, "message": r.Message}})
	}
}

// restoreProfile adds the tenant's saved profile name to the context's
// starting cookies and localStorage (before any the run's auth bindings
// set, which win). A profile never saved restores nothing; one that cannot
// be opened (its key is gone) is reported and the run starts without it.
func (w *Worker) restoreProfile(ctx context.Context, env *runEnv, name string) error {
	if !governance.ProfileNamePattern.MatchString(name) {
		return &runner.Error{Category: runner.CategoryInternal,
			Message: fmt.Sprintf("browser.profile %q must match %s", name, governance.ProfileNamePattern)}
	}
	if w.cfg.Keyring == nil {
		return &runner.Error{Category: runner.CategoryInternal,
			Message: "persistent browser profiles need an encryption key; the server has none"}
	}
	raw, err := env.store.LoadBrowserProfile(ctx, w.cfg.Keyring, env.tenant, name)
	if errors.Is(err, fault.ErrNotFound) {
		env.log.InfoContext(ctx, "persistent profile not saved yet; the run starts empty", "profile", name)
		return nil
	}
	var st *governance.BrowserState
	if err == nil {
		st, err = governance.UnmarshalState(raw)
	}
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		env.log.WarnContext(ctx, "persistent profile cannot be opened; the run starts without it", "profile", name, "error", err)
		env.event(ctx, &wfv1.RunEvent{Type: wfv1.RunEventType_RUN_EVENT_TYPE_POLICY, Status: wfv1.RunStatus_RUN_STATUS_RUNNING,
			Message: fmt.Sprintf("persistent profile %q cannot be opened (%v); the run starts without it and saves it anew", name, err)})
		return nil
	}
	cookies, storage := st.Rules(time.Now())
	env.b.rules.Cookies = append(cookies, env.b.rules.Cookies...)
	env.b.rules.LocalStorage = append(storage, env.b.rules.LocalStorage...)
	env.log.InfoContext(ctx, "persistent profile restored", "profile", name, "cookies", len(cookies), "origins", len(storage))
	return nil
}

// saveProfile saves the context's cookies and the localStorage of the
// origins the run visited as the tenant's profile name. A crashed context saves nothing; the saved profile is then
// the previous one.
func (w *Worker) saveProfile(ctx context.Context, env *runEnv, name string, run *governance.Run) {
	ctx, cancel := context.WithTimeout(ctx, profileSaveTimeout)
	defer cancel()
	log := env.log.With("profile", name)
	if env.b.lease == nil || env.b.lease.Err() != nil {
		log.WarnContext(ctx, "browser context gone; persistent profile not saved")
		return
	}
	s := env.b.Session()
	page := s.ActivePage()
	if page == nil {
		var err error
		if page, err = s.NewPage(ctx, browser.PageOptions{}); err != nil {
			log.WarnContext(ctx, "persistent profile not saved", "error", err)
			return
		}
	}
	res, err := page.Do(ctx, browser.Action{Kind: browser.ActionGetCookies})
	if err == nil && !res.Success {
		err = res.Error
	}
	if err != nil {
		log.WarnContext(ctx, "persistent profile not saved: reading cookies", "error", err)
		return
	}
	st := governance.StateFromCookies(res.Cookies, time.Now())
	storage, err := governance.ReadLocalStorage(ctx, page, run.Origins())
	if err != nil {
		// What could be read is saved; the rest of the origins lose theirs.
		log.WarnContext(ctx, "persistent profile: reading localStorage", "error", err)
	}
	for _, o := range storage {
		st.AddLocalStorage(o.Origin, o.Items)
	}
	raw, err := st.Marshal()
	if err == nil {
		err = env.store.SaveBrowserProfile(ctx, w.cfg.Keyring, env.tenant, name, raw)
	}
	if err != nil {
		log.WarnContext(ctx, "persistent profile not saved", "error", err)
		return
	}
	log.InfoContext(ctx, "persistent profile saved", "cookies", len(st.Cookies), "origins", len(st.LocalStorage))
}
