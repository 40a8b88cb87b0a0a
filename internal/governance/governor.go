package governance

import (
	"context"
	"net/http"
	"time"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/guard"
)

// Config configures a Governor.
type Config struct {
	// Profiles are the server's site profiles (LoadProfiles of
	// WAYFINDER_SITE_PROFILES_DIR), for every tenant. Default none.
	Profiles *Profiles
	// DefaultRate is the most browser actions per minute on one domain
	// when neither the run nor a site profile sets one
	// (WAYFINDER_DOMAIN_RATE_LIMIT). Default 0: no limit.
	DefaultRate int
	// RobotsTTL is how long a fetched robots.txt is used. Default
	// DefaultRobotsTTL.
	RobotsTTL time.Duration
	// Consent lists the cookie banners the consent policies recognise.
	// Default BuiltinConsent().
	Consent *ConsentList
}

// Governor holds what the governance rules share across the runs of a
// worker process: the per-domain rate limiter, the robots.txt cache, the
// server's site profiles. Create one per process with New; it is safe for
// concurrent use.
type Governor struct {
	cfg     Config
	limiter *limiter
	robots  *robotsCache
	consent *ConsentList
}

// New returns a Governor.
func New(cfg Config) *Governor {
	if cfg.Profiles == nil {
		cfg.Profiles = &Profiles{}
	}
	if cfg.Consent == nil {
		cfg.Consent = BuiltinConsent()
	}
	return &Governor{cfg: cfg, limiter: newLimiter(), robots: newRobotsCache(cfg.RobotsTTL, time.Now), consent: cfg.Consent}
}

// Profiles returns the server's site profiles.
func (g *Governor) Profiles() *Profiles { return g.cfg.Profiles }

// RunConfig is one run's side of the governance rules.
type RunConfig struct {
	// Settings are the run's governance params. Default: robots.txt not
	// checked, the profile's or server's rate, consent policy MODEL.
	Settings *wfv1.GovernanceConfig
	// Profiles are the tenant's own site profiles; for the same domain they
	// win over the server's. Default none.
	Profiles *Profiles
	// Policy is the run's domain policy: robots.txt is fetched only from
	// origins it allows (others are refused by the network guard anyway).
	// Required when Settings.respect_robots_txt is set.
	Policy *guard.Policy
	// Client fetches robots.txt through the run's egress (its network
	// guard proxy). Required when Settings.respect_robots_txt is set.
	Client *http.Client
	// Approve asks a human whether to take an action (CONSENT_POLICY_ASK:
	// accept a cookie banner). Default nil: nobody can approve, and the
	// banner is treated as declined (rejected where it can be).
	Approve func(ctx context.Context, action, reason string) (approved bool, err error)
	// Report is told what the rules did, for the run's POLICY events and
	// the audit log. Default: nothing is reported.
	Report func(ctx context.Context, r Report)
}

// ReportKind names what a rule did.
type ReportKind string

// What the rules report.
const (
	// ReportRobotsDisallowed: a navigation (or an action on a page that
	// was reached by a link) was refused by the site's robots.txt, or a
	// page it disallows was reached. Blocked is set.
	ReportRobotsDisallowed ReportKind = "robots_disallowed"
	// ReportRateLimited: the run waited (a second or more) before acting
	// on a domain; reported once per domain per run.
	ReportRateLimited ReportKind = "rate_limited"
	// ReportConsentAccepted and ReportConsentRejected: the service clicked
	// a cookie banner's accept or reject button by policy.
	ReportConsentAccepted ReportKind = "consent_accepted"
	ReportConsentRejected ReportKind = "consent_rejected"
	// ReportConsentLeft: a banner the policy may not accept has no reject
	// button the service knows; the model was told.
	ReportConsentLeft ReportKind = "consent_left"
	// ReportConsentFailed: clicking the banner's button failed.
	ReportConsentFailed ReportKind = "consent_failed"
)

// Report is one thing a rule did. It holds no secrets: URLs are the
// page's (as the run's steps record them) and messages are the service's.
type Report struct {
	Kind ReportKind
	// Domain is the registrable domain concerned (see Domain).
	Domain string
	URL    string
	// Message is a human-readable summary.
	Message string
	// Blocked is set when the rule refused something.
	Blocked bool
	// Wait is how long a rate-limited action waited.
	Wait time.Duration
}

// Run returns the governance rules of one run: runner.Hooks that check
// robots.txt, space actions per domain and handle cookie banners, sharing
// g's limiter and caches with the worker's other runs.
func (g *Governor) Run(cfg RunConfig) *Run {
	policy := cfg.Settings.GetConsent()
	if policy == wfv1.ConsentPolicy_CONSENT_POLICY_UNSPECIFIED {
		policy = wfv1.ConsentPolicy_CONSENT_POLICY_MODEL
	}
	return &Run{
		g: g, cfg: cfg, policy: policy,
		noted:          map[string]bool{},
		rateReported:   map[string]bool{},
		consentAnswers: map[string]bool{},
		consentLeft:    map[string]bool{},
		origins:        map[string]bool{},
	}
}
