package governance

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
)

// decideJS records a banner decision in the "consent" cookie and removes
// the banner, as consent managers do.
const decideJS = `<script>
function decide(v, id) { document.cookie = 'consent=' + v + '; path=/'; document.getElementById(id).remove(); }
</script>`

const (
	// oneTrustPage has a OneTrust-like banner with accept and reject.
	oneTrustPage = `<!doctype html><title>news</title>` + decideJS + `
<main><h1>News</h1><a href="/other">More</a></main>
<div id="onetrust-banner-sdk" style="position:fixed;bottom:0;left:0;right:0;background:#eee;padding:20px">
  <p>We use cookies to improve your experience.</p>
  <button id="onetrust-reject-all-handler" onclick="decide('rejected','onetrust-banner-sdk')">Reject All</button>
  <button id="onetrust-accept-btn-handler" onclick="decide('accepted','onetrust-banner-sdk')">Accept All Cookies</button>
</div>`
	// acceptOnlyPage has a Cookiebot-like banner without a reject button.
	acceptOnlyPage = `<!doctype html><title>shop</title>` + decideJS + `
<div id="CybotCookiebotDialog" style="position:fixed;top:0;padding:20px;background:#fff">
  <p>This site uses cookies.</p>
  <button id="CybotCookiebotDialogBodyButtonAccept" onclick="decide('accepted','CybotCookiebotDialog')">OK</button>
</div>`
	// lateBannerPage shows its banner a moment after it loaded (10 ms: well
	// inside the probe window even on a loaded machine, but not at load).
	lateBannerPage = `<!doctype html><title>late</title>` + decideJS + `
<div id="onetrust-banner-sdk" style="display:none">
  <button id="onetrust-accept-btn-handler" onclick="decide('accepted','onetrust-banner-sdk')">Accept</button>
</div>
<script>setTimeout(() => { document.getElementById('onetrust-banner-sdk').style.display = 'block'; }, 10);</script>`
	// hiddenBannerPage keeps a dismissed banner in the DOM, hidden.
	hiddenBannerPage = `<!doctype html><title>hidden</title>` + decideJS + `
<div id="onetrust-banner-sdk" style="display:none">
  <button id="onetrust-accept-btn-handler" onclick="decide('accepted','onetrust-banner-sdk')">Accept</button>
</div>`
	// ownBannerPage has a banner only its site profile knows.
	ownBannerPage = `<!doctype html><title>own</title>` + decideJS + `
<section class="privacy-box" id="pbox" style="padding:20px">
  <span>Cookies?</span>
  <button class="yes" onclick="decide('accepted','pbox')">Sure</button>
  <button class="no" onclick="decide('rejected','pbox')">Nope</button>
</section>`
	// genericPage has an unknown banner with the usual button texts.
	genericPage = `<!doctype html><title>generic</title>` + decideJS + `
<div id="gbox" style="padding:20px"><p>We value your privacy.</p>
  <button onclick="decide('accepted','gbox')">Accept   all</button>
  <button onclick="decide('rejected','gbox')">Reject all</button>
</div>`
	plainPage = `<!doctype html><title>plain</title><h1>No banner</h1><button>Accept the terms</button>`
)

// ownProfile is the site profile of ownBannerPage's host.
var ownProfile = &wfv1.SiteProfile{Domain: "127.0.0.1", Description: "test site",
	Consent: &wfv1.ConsentSelectors{Banner: ".privacy-box", Accept: ".privacy-box .yes", Reject: ".privacy-box .no"}}

func TestConsentPolicies(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{
		"/onetrust": oneTrustPage, "/accept-only": acceptOnlyPage, "/late": lateBannerPage,
		"/hidden": hiddenBannerPage, "/own": ownBannerPage, "/generic": genericPage, "/plain": plainPage,
	})
	approve := func(answer bool) func(context.Context, string, string) (bool, error) {
		return func(_ context.Context, action, reason string) (bool, error) {
			if !strings.Contains(action, "127.0.0.1") || !strings.Contains(reason, "ASK") {
				return false, errors.New("unexpected question: " + action + " / " + reason)
			}
			return answer, nil
		}
	}
	const (
		accepted = "cookie banner accepted by policy"
		rejected = "cookie banner rejected by policy"
	)
	for _, tc := range []struct {
		name     string
		path     string
		policy   wfv1.ConsentPolicy
		approve  func(context.Context, string, string) (bool, error)
		profile  bool
		want     string // the consent cookie
		note     string // a note that must be given ("" for none at all)
		report   ReportKind
		unchaged bool // the hook left the page alone (no probe)
	}{
		{name: "model leaves it", path: "/onetrust", policy: wfv1.ConsentPolicy_CONSENT_POLICY_MODEL, unchaged: true},
		{name: "unspecified is model", path: "/onetrust", policy: wfv1.ConsentPolicy_CONSENT_POLICY_UNSPECIFIED, unchaged: true},
		{name: "auto accepts", path: "/onetrust", policy: wfv1.ConsentPolicy_CONSENT_POLICY_AUTO, want: "accepted", note: accepted, report: ReportConsentAccepted},
		{name: "reject rejects", path: "/onetrust", policy: wfv1.ConsentPolicy_CONSENT_POLICY_REJECT, want: "rejected", note: rejected, report: ReportConsentRejected},
		{name: "reject never accepts", path: "/accept-only", policy: wfv1.ConsentPolicy_CONSENT_POLICY_REJECT, note: "without a reject button", report: ReportConsentLeft},
		{name: "ask approved", path: "/onetrust", policy: wfv1.ConsentPolicy_CONSENT_POLICY_ASK, approve: approve(true), want: "accepted", note: accepted + " (a human approved)", report: ReportConsentAccepted},
		{name: "ask declined", path: "/onetrust", policy: wfv1.ConsentPolicy_CONSENT_POLICY_ASK, approve: approve(false), want: "rejected", note: rejected + " (a human was asked and declined)", report: ReportConsentRejected},
		{name: "ask without approver", path: "/onetrust", policy: wfv1.ConsentPolicy_CONSENT_POLICY_ASK, want: "rejected", note: rejected, report: ReportConsentRejected},
		{name: "ask failing approver", path: "/onetrust", policy: wfv1.ConsentPolicy_CONSENT_POLICY_ASK, approve: func(context.Context, string, string) (bool, error) { return true, errors.New("boom") }, want: "rejected", note: rejected, report: ReportConsentRejected},
		{name: "ask declined, accept only", path: "/accept-only", policy: wfv1.ConsentPolicy_CONSENT_POLICY_ASK, approve: approve(false), note: "without a reject button", report: ReportConsentLeft},
		{name: "late banner", path: "/late", policy: wfv1.ConsentPolicy_CONSENT_POLICY_AUTO, want: "accepted", note: accepted, report: ReportConsentAccepted},
		{name: "hidden banner is left alone", path: "/hidden", policy: wfv1.ConsentPolicy_CONSENT_POLICY_AUTO},
		{name: "profile banner accepted", path: "/own", policy: wfv1.ConsentPolicy_CONSENT_POLICY_AUTO, profile: true, want: "accepted", note: accepted, report: ReportConsentAccepted},
		{name: "profile banner rejected", path: "/own", policy: wfv1.ConsentPolicy_CONSENT_POLICY_REJECT, profile: true, want: "rejected", note: rejected, report: ReportConsentRejected},
		{name: "profile banner, model", path: "/own", policy: wfv1.ConsentPolicy_CONSENT_POLICY_MODEL, profile: true, note: "Cookie banner: banner .privacy-box accept .privacy-box .yes reject .privacy-box .no", unchaged: true},
		{name: "unknown banner without profile", path: "/own", policy: wfv1.ConsentPolicy_CONSENT_POLICY_AUTO},
		{name: "generic accept", path: "/generic", policy: wfv1.ConsentPolicy_CONSENT_POLICY_AUTO, want: "accepted", note: accepted, report: ReportConsentAccepted},
		{name: "generic reject", path: "/generic", policy: wfv1.ConsentPolicy_CONSENT_POLICY_REJECT, want: "rejected", note: rejected, report: ReportConsentRejected},
		{name: "no banner", path: "/plain", policy: wfv1.ConsentPolicy_CONSENT_POLICY_AUTO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rep reports
			cfg := RunConfig{Settings: &wfv1.GovernanceConfig{Consent: tc.policy}, Approve: tc.approve, Report: rep.add}
			if tc.profile {
				cfg.Profiles = mustProfiles(t, ownProfile)
			}
			run := New(Config{}).Run(cfg)
			page := openPage(t, base+tc.path)
			res, err := run.AfterAction(context.Background(), page, browser.Action{Kind: browser.ActionNavigate, URL: base + tc.path}, nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, cookie(t, page, "consent"))
			require.Equal(t, !tc.unchaged, res.Changed)
			notes := strings.Join(res.Notes, "\n")
			if tc.note == "" && !tc.profile {
				require.Empty(t, res.Notes)
			} else {
				require.Contains(t, notes, tc.note)
			}
			if tc.report == "" {
				require.Empty(t, rep.kinds())
			} else {
				require.Equal(t, []ReportKind{tc.report}, rep.kinds())
				require.Equal(t, "127.0.0.1", rep.all[0].Domain)
			}
		})
	}
}

func TestConsentOncePerDomain(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/a": acceptOnlyPage, "/b": acceptOnlyPage, "/onetrust": oneTrustPage})
	asked := 0
	var rep reports
	run := New(Config{}).Run(RunConfig{
		Settings: &wfv1.GovernanceConfig{Consent: wfv1.ConsentPolicy_CONSENT_POLICY_ASK},
		Approve:  func(context.Context, string, string) (bool, error) { asked++; return false, nil },
		Report:   rep.add,
	})
	page := openPage(t, base+"/a")
	ctx := context.Background()
	res, err := run.AfterAction(ctx, page, browser.Action{Kind: browser.ActionNavigate, URL: base + "/a"}, nil)
	require.NoError(t, err)
	require.Len(t, res.Notes, 1)

	// The next page of the domain: the human is not asked again and the
	// model not told again.
	nav, err := page.Do(ctx, browser.Action{Kind: browser.ActionNavigate, URL: base + "/b"})
	require.NoError(t, err)
	res, err = run.AfterAction(ctx, page, browser.Action{Kind: browser.ActionNavigate, URL: base + "/b"}, nav)
	require.NoError(t, err)
	require.Empty(t, res.Notes)
	require.True(t, res.Changed)
	nav, err = page.Do(ctx, browser.Action{Kind: browser.ActionNavigate, URL: base + "/onetrust"})
	require.NoError(t, err)
	res, err = run.AfterAction(ctx, page, browser.Action{Kind: browser.ActionNavigate, URL: base + "/onetrust"}, nav)
	require.NoError(t, err)
	require.Equal(t, []string{"cookie banner rejected by policy (a human was asked and declined)"}, res.Notes)
	require.Equal(t, 1, asked)
	require.Equal(t, []ReportKind{ReportConsentLeft, ReportConsentRejected}, rep.kinds())

	// An action that did not load a page is not probed.
	click, err := page.Do(ctx, browser.Action{Kind: browser.ActionScroll, Direction: "down"})
	require.NoError(t, err)
	res, err = run.AfterAction(ctx, page, browser.Action{Kind: browser.ActionScroll, Direction: "down"}, click)
	require.NoError(t, err)
	require.False(t, res.Changed)
}

func TestConsentInvalidProfileSelectors(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/onetrust": oneTrustPage})
	bad := &wfv1.SiteProfile{Domain: "127.0.0.1", Consent: &wfv1.ConsentSelectors{Banner: "div[[[", Accept: "#onetrust-accept-btn-handler"}}
	run := New(Config{}).Run(RunConfig{Settings: &wfv1.GovernanceConfig{Consent: wfv1.ConsentPolicy_CONSENT_POLICY_AUTO},
		Profiles: mustProfiles(t, bad)})
	page := openPage(t, base+"/onetrust")
	_, err := run.AfterAction(context.Background(), page, browser.Action{Kind: browser.ActionNavigate, URL: base + "/onetrust"}, nil)
	require.NoError(t, err)
	require.Equal(t, "accepted", cookie(t, page, "consent"), "the built-in list still applies")
}

func TestBuiltinConsent(t *testing.T) {
	t.Parallel()
	l := BuiltinConsent()
	var names []string
	for _, m := range l.Managers {
		names = append(names, m.Name)
		require.NotEmpty(t, m.Banner, m.Name)
		require.NotEmpty(t, m.Accept, m.Name)
		require.NotEmpty(t, m.Reject, m.Name)
	}
	for _, want := range []string{"OneTrust", "Cookiebot", "Didomi", "Quantcast Choice", "TrustArc", "Usercentrics"} {
		require.Contains(t, names, want)
	}
	require.Contains(t, l.Buttons.Accept, "Accept all")
	require.Contains(t, l.Buttons.Reject, "Reject all")

	// Every selector is valid CSS: one invalid selector would spoil the
	// probe of all managers together.
	page := openPage(t, serve(t, map[string]string{"/": plainPage})+"/")
	for _, m := range l.Managers {
		sel := joinSelectors(m.Banner, m.Accept, m.Reject)
		res, err := page.Do(context.Background(), browser.Action{Kind: browser.ActionExtract,
			Extract: &browser.ExtractSpec{Rows: sel, Fields: map[string]string{"t": ""}}})
		require.NoError(t, err)
		require.True(t, res.Success, "%s: %s: %v", m.Name, sel, res.Error)
	}
	res, err := page.Do(context.Background(), browser.Action{Kind: browser.ActionExtract,
		Extract: &browser.ExtractSpec{Rows: "div[[[", Fields: map[string]string{"t": ""}}})
	require.NoError(t, err)
	require.False(t, res.Success, "the check can fail")
}
