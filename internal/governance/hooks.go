package governance

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// Run is one run's governance rules, the runner.Hooks made by
// Governor.Run. The runner calls it from one goroutine; it is not safe for
// concurrent use.
type Run struct {
	g      *Governor
	cfg    RunConfig
	policy wfv1.ConsentPolicy

	// actionDomain is the domain of the action under way, whose polite
	// delay starts when it ends; actionDelay is that delay.
	actionDomain string
	actionDelay  time.Duration
	// lastURL is the page's URL after the latest action.
	lastURL string

	noted          map[string]bool // site profiles told to the model, by domain
	rateReported   map[string]bool // domains whose rate-limit wait was reported
	consentAnswers map[string]bool // ASK answers by domain
	consentLeft    map[string]bool // domains whose unhandled banner the model was told of
	origins        map[string]bool
	originList     []string
}

var _ runner.Hooks = (*Run)(nil)

// minReportedWait is the shortest rate-limit wait worth a POLICY event.
const minReportedWait = time.Second

// unpaced are actions that send nothing to the site (or only read what the
// page shows): they are not counted against its rate.
var unpaced = map[browser.ActionKind]bool{
	browser.ActionScreenshot: true, browser.ActionGetCookies: true, browser.ActionSetCookies: true,
	browser.ActionSwitchTab: true, browser.ActionCloseTab: true, browser.ActionWait: true,
	browser.ActionExtract: true,
}

// interactions are the actions refused on a page robots.txt disallows
// (reached by a link, a form or a redirect): everything but leaving it
// (navigate elsewhere, back, forward, switch or close the tab) and
// looking at it.
var interactions = map[browser.ActionKind]bool{
	browser.ActionClick: true, browser.ActionDoubleClick: true, browser.ActionRightClick: true,
	browser.ActionFill: true, browser.ActionType: true, browser.ActionPress: true,
	browser.ActionSelect: true, browser.ActionCheck: true, browser.ActionUncheck: true,
	browser.ActionDrag: true, browser.ActionUpload: true, browser.ActionReload: true,
	browser.ActionExtract: true,
}

// BeforeAction checks robots.txt before a navigation (and before acting on
// a page it disallows) and waits for the domain's rate. A refusal is a
// *runner.Refusal with code domain_blocked.
func (r *Run) BeforeAction(ctx context.Context, page *browser.Page, act *browser.Action) error {
	robotsOn := r.cfg.Settings.GetRespectRobotsTxt() &&
		(act.Kind == browser.ActionNavigate || interactions[act.Kind])
	paced := !unpaced[act.Kind] && r.paced()
	if !robotsOn && !paced {
		return nil
	}
	u, err := r.actionURL(ctx, page, act)
	if err != nil || u == nil {
		return err
	}
	if robotsOn {
		if err := r.checkRobots(ctx, u, act.Kind == browser.ActionNavigate); err != nil {
			return err
		}
	}
	if !paced {
		return nil
	}
	prof := r.profile(u.Hostname())
	domain := Domain(u.Hostname())
	rate := r.rate(prof)
	waited, err := r.g.limiter.Wait(ctx, domain, rate)
	if err != nil {
		return err
	}
	r.actionDomain, r.actionDelay = domain, prof.GetPoliteDelay().AsDuration()
	if waited >= minReportedWait && !r.rateReported[domain] {
		r.rateReported[domain] = true
		msg := fmt.Sprintf("waited %s before acting on %s (rate limit %s)", waited.Round(100*time.Millisecond), domain, rateText(rate))
		r.report(ctx, Report{Kind: ReportRateLimited, Domain: domain, URL: redactedURL(u), Message: msg, Wait: waited})
	}
	return nil
}

func rateText(rate int) string {
	if rate <= 0 {
		return "none; a site profile's polite delay"
	}
	return fmt.Sprintf("%d actions a minute", rate)
}

// AfterAction starts the domain's polite delay, tells the model about a
// site profile on the first visit of its domain, notes a page robots.txt
// disallows, and applies the consent policy to a page that loaded.
func (r *Run) AfterAction(ctx context.Context, page *browser.Page, act browser.Action, res *browser.ActionResult) (runner.HookResult, error) {
	var out runner.HookResult
	if r.actionDomain != "" {
		r.g.limiter.Done(r.actionDomain, r.actionDelay)
		r.actionDomain, r.actionDelay = "", 0
	}
	var raw string
	switch {
	case res != nil:
		raw = res.URL
	case page != nil:
		loc, _, err := page.Location(ctx)
		if err != nil {
			return out, err
		}
		raw = loc
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return out, nil
	}
	r.lastURL = redactedURL(u)
	r.visit(u)
	loaded := res == nil || res.Navigated || res.OpenedTab
	host := u.Hostname()
	prof := r.profile(host)
	if prof != nil && !r.noted[prof.GetDomain()] {
		r.noted[prof.GetDomain()] = true
		out.Notes = append(out.Notes, profileNote(prof))
	}
	if loaded && res != nil && r.cfg.Settings.GetRespectRobotsTxt() {
		// A link, a form or a redirect may land where robots.txt says no.
		if allowed, why, err := r.robotsVerdict(ctx, u); err != nil {
			return out, err
		} else if !allowed {
			msg := fmt.Sprintf("%s This page was reached by a link, a form or a redirect; act on it only to leave it (navigate elsewhere, go back, switch or close the tab).", why)
			out.Notes = append(out.Notes, msg)
			r.report(ctx, Report{Kind: ReportRobotsDisallowed, Domain: Domain(host), URL: redactedURL(u), Message: why, Blocked: true})
		}
	}
	if loaded && page != nil && r.policy != wfv1.ConsentPolicy_CONSENT_POLICY_MODEL {
		cr, err := r.consent(ctx, page, host, prof)
		out.Notes = append(out.Notes, cr.Notes...)
		out.Changed = out.Changed || cr.Changed
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// Origins returns the http(s) origins the run's pages loaded, in the order
// first seen.
func (r *Run) Origins() []string { return append([]string(nil), r.originList...) }

func (r *Run) visit(u *url.URL) {
	o := u.Scheme + "://" + u.Host
	if !r.origins[o] {
		r.origins[o] = true
		r.originList = append(r.originList, o)
	}
}

// actionURL is the URL an action acts on: a navigation's target, else the
// page's. Nil for pages that are not http(s) (about:blank).
func (r *Run) actionURL(ctx context.Context, page *browser.Page, act *browser.Action) (*url.URL, error) {
	raw := act.URL
	if act.Kind != browser.ActionNavigate {
		if page == nil {
			return nil, nil
		}
		loc, _, err := page.Location(ctx)
		if err != nil {
			return nil, err
		}
		raw = loc
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil // the domain policy refuses what is not http(s)
	}
	return u, nil
}

// paced reports whether any rate or polite delay can apply to the run.
func (r *Run) paced() bool {
	return r.cfg.Settings.GetMaxActionsPerMinute() > 0 || r.g.cfg.DefaultRate > 0 ||
		pacedProfiles(r.cfg.Profiles) || pacedProfiles(r.g.cfg.Profiles)
}

func pacedProfiles(ps *Profiles) bool {
	if ps == nil {
		return false
	}
	for _, e := range ps.sorted {
		if e.p.GetMaxActionsPerMinute() > 0 || e.p.GetPoliteDelay().AsDuration() > 0 {
			return true
		}
	}
	return false
}

func (r *Run) profile(host string) *wfv1.SiteProfile {
	return Resolve(host, r.cfg.Profiles, r.g.cfg.Profiles)
}

// rate is the actions per minute for a domain: the run's, else its site
// profile's, else the server's.
func (r *Run) rate(prof *wfv1.SiteProfile) int {
	if n := r.cfg.Settings.GetMaxActionsPerMinute(); n > 0 {
		return int(n)
	}
	if n := prof.GetMaxActionsPerMinute(); n > 0 {
		return int(n)
	}
	return r.g.cfg.DefaultRate
}

// checkRobots refuses u when its site's robots.txt disallows it (for a
// navigation: going there; otherwise: acting on the page).
func (r *Run) checkRobots(ctx context.Context, u *url.URL, navigation bool) error {
	allowed, why, err := r.robotsVerdict(ctx, u)
	if err != nil || allowed {
		return err
	}
	msg := why
	if !navigation {
		msg += " Only leaving this page is allowed (navigate elsewhere, go back, switch or close the tab)."
	}
	r.report(ctx, Report{Kind: ReportRobotsDisallowed, Domain: Domain(u.Hostname()), URL: redactedURL(u), Message: why, Blocked: true})
	return &runner.Refusal{Code: string(browser.CodeDomainBlocked), Message: msg}
}

// robotsVerdict says whether robots.txt lets Wayfinder visit u, and why
// not. URLs the run's domain policy refuses are left to it (allowed here).
func (r *Run) robotsVerdict(ctx context.Context, u *url.URL) (bool, string, error) {
	if r.cfg.Policy != nil {
		if err := r.cfg.Policy.CheckURL(ctx, u); err != nil {
			if ctx.Err() != nil {
				return false, "", context.Cause(ctx)
			}
			return true, "", nil // the network guard refuses it, with its own reason
		}
	}
	if r.cfg.Client == nil {
		return true, "", nil
	}
	origin := u.Scheme + "://" + u.Host
	rb, err := r.g.robots.get(ctx, r.cfg.Client, origin)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return false, "", context.Cause(ctx)
	case errors.Is(err, errRobotsBlocked):
		return true, "", nil
	default:
		return false, fmt.Sprintf("robots.txt of %s could not be fetched (%v); RFC 9309 says an unreachable robots.txt disallows everything, and this run respects robots.txt.", origin, err), nil
	}
	if rb.Allowed(u) {
		return true, "", nil
	}
	if rb.disallowAll {
		return false, fmt.Sprintf("robots.txt of %s answers with a server error, which disallows everything (RFC 9309) for this run, which respects robots.txt.", origin), nil
	}
	return false, fmt.Sprintf("robots.txt disallows %s for Wayfinder, and this run respects robots.txt; choose another page.", redactedURL(u)), nil
}

// redactedURL is u without user info or fragment.
func redactedURL(u *url.URL) string {
	c := *u
	c.User, c.Fragment = nil, ""
	return c.String()
}

func (r *Run) report(ctx context.Context, rep Report) {
	if r.cfg.Report != nil {
		r.cfg.Report(ctx, rep)
	}
}
