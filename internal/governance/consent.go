package governance

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// Banner is a known cookie banner: CSS selectors (open shadow roots
// included) of its container and of its accept and reject buttons. Any may
// be empty.
type Banner struct {
	Name   string `json:"name"`
	Banner string `json:"banner"`
	Accept string `json:"accept"`
	Reject string `json:"reject"`
}

// ConsentList is what the service recognises as a cookie banner: consent
// managers by their selectors, and generic button texts ("Accept all",
// "Reject all") matched exactly (case and spacing aside) against the
// buttons and links of the page.
type ConsentList struct {
	Managers []Banner `json:"managers"`
	Buttons  struct {
		Accept []string `json:"accept"`
		Reject []string `json:"reject"`
	} `json:"buttons"`
}

//go:embed consent.json
var builtinConsent []byte

// BuiltinConsent returns the built-in list of common consent managers
// (OneTrust, Cookiebot, Didomi, Quantcast Choice, TrustArc, Usercentrics,
// Osano, Complianz, CookieYes) and generic button texts.
func BuiltinConsent() *ConsentList {
	var l ConsentList
	if err := json.Unmarshal(builtinConsent, &l); err != nil {
		panic(fmt.Sprintf("governance: built-in consent.json: %v", err)) // a build defect
	}
	return &l
}

// pageDoer is what the consent rules need of a browser page; *browser.Page is
// one.
type pageDoer interface {
	Do(ctx context.Context, a browser.Action) (*browser.ActionResult, error)
}

// Timeouts of the consent rules' browser actions.
const (
	// consentProbeTimeout is how long a page is watched for a known banner
	// to become visible after it loaded. It also bounds the first look, so
	// it leaves room for a slow evaluation on a loaded machine (250 ms
	// missed banners that were already showing under load).
	consentProbeTimeout = 500 * time.Millisecond
	// consentClickTimeout bounds the click on a banner's button.
	consentClickTimeout = 5 * time.Second
)

// bannerGroup is a set of selectors probed with one browser action.
type bannerGroup struct {
	source         string // for messages: "site profile example.com"
	probe          string // any of banner, accept, reject
	accept, reject string
}

// foundBanner is a banner showing on the page, with the targets of its
// buttons (nil when it has none the service knows).
type foundBanner struct {
	source         string
	accept, reject *browser.Target
}

func joinSelectors(sels ...string) string {
	var out []string
	for _, s := range sels {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}

func (l *ConsentList) groups(prof *wfv1.SiteProfile) []bannerGroup {
	var gs []bannerGroup
	if c := prof.GetConsent(); c != nil {
		if probe := joinSelectors(c.GetBanner(), c.GetAccept(), c.GetReject()); probe != "" {
			gs = append(gs, bannerGroup{source: "site profile " + prof.GetDomain(), probe: probe,
				accept: c.GetAccept(), reject: c.GetReject()})
		}
	}
	if len(l.Managers) > 0 {
		var probe, accept, reject []string
		for _, m := range l.Managers {
			probe = append(probe, m.Banner, m.Accept, m.Reject)
			accept = append(accept, m.Accept)
			reject = append(reject, m.Reject)
		}
		gs = append(gs, bannerGroup{source: "a known consent manager", probe: joinSelectors(probe...),
			accept: joinSelectors(accept...), reject: joinSelectors(reject...)})
	}
	return gs
}

// findBanner looks for a known banner on page: the site profile's, then
// the consent managers', each by one short wait for a visible match, then
// the generic button texts in the snapshot the last wait returned. It
// returns nil when none shows. (A site profile's selector that is not valid
// CSS never matches.)
func (l *ConsentList) findBanner(ctx context.Context, page pageDoer, prof *wfv1.SiteProfile) (*foundBanner, error) {
	var snap *browser.Snapshot
	for _, g := range l.groups(prof) {
		res, err := visible(ctx, page, g.probe)
		if err != nil {
			return nil, err
		}
		snap = res.Snapshot
		if res.Success {
			fb := &foundBanner{source: g.source}
			if g.accept != "" {
				fb.accept = &browser.Target{CSS: g.accept, Timeout: time.Second}
			}
			if g.reject != "" {
				fb.reject = &browser.Target{CSS: g.reject, Timeout: time.Second}
			}
			return fb, nil
		}
	}
	if snap == nil {
		return nil, nil
	}
	fb := &foundBanner{source: "a cookie banner button"}
	for _, el := range snap.Elements {
		if el.Role != "button" && el.Role != "link" || slices.Contains(el.State, "disabled") {
			continue
		}
		name := normaliseText(el.Name)
		if fb.accept == nil && slices.ContainsFunc(l.Buttons.Accept, func(s string) bool { return normaliseText(s) == name }) {
			fb.accept = &browser.Target{Role: el.Role, Name: el.Name, Timeout: time.Second}
		}
		if fb.reject == nil && slices.ContainsFunc(l.Buttons.Reject, func(s string) bool { return normaliseText(s) == name }) {
			fb.reject = &browser.Target{Role: el.Role, Name: el.Name, Timeout: time.Second}
		}
	}
	if fb.accept == nil && fb.reject == nil {
		return nil, nil
	}
	return fb, nil
}

// visible waits a moment for an element matching the CSS selector sel to
// be visible; the result's Success says whether one is.
func visible(ctx context.Context, page pageDoer, sel string) (*browser.ActionResult, error) {
	return page.Do(ctx, browser.Action{Kind: browser.ActionWait,
		Target: &browser.Target{CSS: sel}, Timeout: consentProbeTimeout})
}

func normaliseText(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// consent applies the run's consent policy to the page after it loaded.
// It is called only for policies other than MODEL.
func (r *Run) consent(ctx context.Context, page pageDoer, host string, prof *wfv1.SiteProfile) (runner.HookResult, error) {
	out := runner.HookResult{Changed: true} // the probes took snapshots: the action's is stale
	fb, err := r.g.consent.findBanner(ctx, page, prof)
	if err != nil || fb == nil {
		return out, err
	}
	domain := Domain(host)
	accept := r.policy == wfv1.ConsentPolicy_CONSENT_POLICY_AUTO
	asked := ""
	if r.policy == wfv1.ConsentPolicy_CONSENT_POLICY_ASK {
		approved, ok := r.consentAnswers[domain]
		if !ok {
			approved, err = r.askConsent(ctx, domain)
			if err != nil {
				return out, err
			}
			r.consentAnswers[domain] = approved
		}
		accept = approved
		asked = " (a human was asked and declined)"
		if approved {
			asked = " (a human approved)"
		}
	}
	verb, target := "rejected", fb.reject
	kind := ReportConsentRejected
	if accept {
		verb, target, kind = "accepted", fb.accept, ReportConsentAccepted
	}
	if target != nil && target.CSS != "" {
		// The banner shows; is this button of it there too?
		res, err := visible(ctx, page, target.CSS)
		if err != nil {
			return out, err
		}
		if !res.Success {
			target = nil
		}
	}
	if target == nil {
		// REJECT (or a declined ASK) and no reject button: never accept.
		if r.consentLeft[domain] {
			return out, nil
		}
		r.consentLeft[domain] = true
		msg := fmt.Sprintf("A cookie banner is showing (%s) without a reject button the service knows; the run's consent policy%s says not to accept it. Dismiss it without accepting (a close or \"necessary only\" control) or work around it.", fb.source, asked)
		if accept {
			msg = fmt.Sprintf("A cookie banner is showing (%s) without an accept button the service knows; handle it yourself.", fb.source)
		}
		out.Notes = append(out.Notes, msg)
		r.report(ctx, Report{Kind: ReportConsentLeft, Domain: domain, URL: r.lastURL, Message: msg})
		return out, nil
	}
	res, err := page.Do(ctx, browser.Action{Kind: browser.ActionClick, Target: target, Timeout: consentClickTimeout})
	if err != nil {
		return out, err
	}
	if !res.Success {
		msg := fmt.Sprintf("The service tried to %s the cookie banner (%s) by policy and could not: %s", strings.TrimSuffix(verb, "ed"), fb.source, res.Error.Message)
		out.Notes = append(out.Notes, msg)
		r.report(ctx, Report{Kind: ReportConsentFailed, Domain: domain, URL: r.lastURL, Message: msg})
		return out, nil
	}
	out.Notes = append(out.Notes, "cookie banner "+verb+" by policy"+asked)
	what := fb.source
	if res.Element != "" {
		what += ": " + res.Element
	}
	r.report(ctx, Report{Kind: kind, Domain: domain, URL: r.lastURL,
		Message: fmt.Sprintf("cookie banner on %s %s by policy%s (%s)", domain, verb, asked, what)})
	return out, nil
}

// askConsent asks the run's approver whether to accept the cookie banner
// of domain; without one the answer is no.
func (r *Run) askConsent(ctx context.Context, domain string) (bool, error) {
	if r.cfg.Approve == nil {
		return false, nil
	}
	ok, err := r.cfg.Approve(ctx, "accept the cookie banner of "+domain,
		"the run's consent policy is ASK: accept all cookies of "+domain+"? Declining rejects them where the banner allows it.")
	if err != nil {
		if ctx.Err() != nil {
			return false, context.Cause(ctx)
		}
		return false, nil // an approver that fails has not approved
	}
	return ok, nil
}
