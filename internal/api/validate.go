package api

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/language"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/governance"
	"github.com/wayfinder/wayfinder/internal/guard"
)

// Limits and defaults of run parameters.
const (
	maxGoalLen           = 10000
	maxURLLen            = 2048
	defaultMaxSteps      = 25
	maxMaxSteps          = 500
	defaultHistoryDepth  = 3
	maxHistoryDepth      = 20
	defaultWidth         = 1280
	defaultHeight        = 800
	minViewport          = 200
	maxViewport          = 4096
	maxUserAgentLen      = 512
	maxLabels            = 32
	maxLabelValueLen     = 255
	maxRequestIDLen      = 128
	maxDomainPatterns    = 256
	defaultNavTimeout    = 30 * time.Second
	defaultActionTimeout = 15 * time.Second
	minRunTimeout        = 10 * time.Second
)

var labelKey = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// validateParams checks p field by field and, when it is valid, returns a
// copy with every default filled in, which is what the run stores.
// maxRunTimeout is the server's limit (and default) for run_timeout.
func validateParams(p *wfv1.RunParams, maxRunTimeout time.Duration) (*wfv1.RunParams, error) {
	var v fault.Violations
	if p == nil {
		v.Add("params", "run parameters are required")
		return nil, v.Err()
	}
	p = proto.Clone(p).(*wfv1.RunParams)

	goal := strings.TrimSpace(p.Goal)
	switch {
	case goal == "":
		v.Add("params.goal", "a goal is required")
	case utf8.RuneCountInString(goal) > maxGoalLen:
		v.Add("params.goal", "at most %d characters", maxGoalLen)
	}
	validateStartURL(&v, p.StartUrl)

	if p.Headless != nil && !*p.Headless {
		v.Unimplemented("params.headless", "headful browsers are not supported yet; omit the field or set it to true")
	}
	p.Headless = proto.Bool(true)

	for _, f := range []struct {
		field string
		list  []string
	}{{"params.allowed_domains", p.AllowedDomains}, {"params.blocked_domains", p.BlockedDomains}} {
		field, list := f.field, f.list
		if len(list) > maxDomainPatterns {
			v.Add(field, "at most %d patterns", maxDomainPatterns)
			continue
		}
		for i, pat := range list {
			if err := guard.ValidatePattern(pat); err != nil {
				v.Add(fmt.Sprintf("%s[%d]", field, i), "%v", err)
			}
		}
	}

	switch {
	case p.MaxSteps == 0:
		p.MaxSteps = defaultMaxSteps
	case p.MaxSteps < 1 || p.MaxSteps > maxMaxSteps:
		v.Add("params.max_steps", "must be between 1 and %d (got %d)", maxMaxSteps, p.MaxSteps)
	}
	switch {
	case p.ScreenshotHistoryDepth == nil:
		p.ScreenshotHistoryDepth = proto.Int32(defaultHistoryDepth)
	case *p.ScreenshotHistoryDepth < 0 || *p.ScreenshotHistoryDepth > maxHistoryDepth:
		v.Add("params.screenshot_history_depth", "must be between 0 and %d (got %d)", maxHistoryDepth, *p.ScreenshotHistoryDepth)
	}

	validateEngine(&v, p)
	validateAuth(&v, p.Auth)
	validateGovernance(&v, p.Governance)
	validateLive(&v, p)
	validateReplay(&v, p.Replay)

	p.Browser = validateBrowser(&v, p.Browser, maxRunTimeout)
	validateLabels(&v, p.Labels)

	if err := v.Err(); err != nil {
		return nil, err
	}
	p.Goal = goal
	return p, nil
}

func validateStartURL(v *fault.Violations, raw string) {
	const field = "params.start_url"
	if raw == "" {
		v.Add(field, "a start URL is required")
		return
	}
	if len(raw) > maxURLLen {
		v.Add(field, "at most %d characters", maxURLLen)
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		v.Add(field, "not a valid URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		v.Add(field, "must be an absolute http or https URL (got scheme %q)", u.Scheme)
	case u.Hostname() == "":
		v.Add(field, "must name a host")
	case u.User != nil:
		// Credentials in a URL would be stored, logged and shown to the
		// model; they belong in auth bindings.
		v.Add(field, "must not contain credentials (user:password@); use auth bindings")
	}
}

func validateBrowser(v *fault.Violations, b *wfv1.BrowserConfig, maxRunTimeout time.Duration) *wfv1.BrowserConfig {
	if b == nil {
		b = &wfv1.BrowserConfig{}
	}
	if b.Viewport == nil {
		b.Viewport = &wfv1.Viewport{Width: defaultWidth, Height: defaultHeight}
	}
	for _, d := range []struct {
		field string
		val   int32
	}{{"params.browser.viewport.width", b.Viewport.Width}, {"params.browser.viewport.height", b.Viewport.Height}} {
		if d.val < minViewport || d.val > maxViewport {
			v.Add(d.field, "must be between %d and %d pixels (got %d)", minViewport, maxViewport, d.val)
		}
	}
	if len(b.UserAgent) > maxUserAgentLen || strings.ContainsAny(b.UserAgent, "\r\n") {
		v.Add("params.browser.user_agent", "at most %d characters on one line", maxUserAgentLen)
	}
	if b.Locale != "" {
		if _, err := language.Parse(b.Locale); err != nil {
			v.Add("params.browser.locale", "not a BCP 47 language tag: %q", b.Locale)
		}
	}
	if b.Timezone != "" {
		if _, err := time.LoadLocation(b.Timezone); err != nil || b.Timezone == "Local" {
			v.Add("params.browser.timezone", "not an IANA time zone: %q", b.Timezone)
		}
	}
	if b.Profile != "" && !governance.ProfileNamePattern.MatchString(b.Profile) {
		v.Add("params.browser.profile", "must match %s", governance.ProfileNamePattern)
	}
	b.NavigationTimeout = validateDuration(v, "params.browser.navigation_timeout", b.NavigationTimeout, defaultNavTimeout, time.Second, 5*time.Minute)
	b.ActionTimeout = validateDuration(v, "params.browser.action_timeout", b.ActionTimeout, defaultActionTimeout, time.Second, 5*time.Minute)
	b.RunTimeout = validateDuration(v, "params.browser.run_timeout", b.RunTimeout, maxRunTimeout, min(minRunTimeout, maxRunTimeout), maxRunTimeout)
	return b
}

// validateDuration checks an optional duration against [lo, hi] and
// returns it, or def when it is unset.
func validateDuration(v *fault.Violations, field string, d *durationpb.Duration, def, lo, hi time.Duration) *durationpb.Duration {
	if d == nil {
		return durationpb.New(def)
	}
	if err := d.CheckValid(); err != nil {
		v.Add(field, "invalid duration: %v", err)
		return d
	}
	if got := d.AsDuration(); got < lo || got > hi {
		v.Add(field, "must be between %s and %s (got %s)", lo, hi, got)
	}
	return d
}

func validateLabels(v *fault.Violations, labels map[string]string) {
	if len(labels) > maxLabels {
		v.Add("params.labels", "at most %d labels", maxLabels)
		return
	}
	for k, val := range labels {
		if !labelKey.MatchString(k) {
			v.Add("params.labels", "key %q must be 1-63 characters of [a-z0-9_.-] starting with a letter or digit", k)
		}
		if len(val) > maxLabelValueLen {
			v.Add("params.labels", "value of %q is longer than %d characters", k, maxLabelValueLen)
		}
	}
}

// parseLabelSelector turns ["k=v", ...] into a map.
func parseLabelSelector(v *fault.Violations, selectors []string) map[string]string {
	out := make(map[string]string, len(selectors))
	for i, s := range selectors {
		k, val, ok := strings.Cut(s, "=")
		if !ok || !labelKey.MatchString(k) {
			v.Add(fmt.Sprintf("labels[%d]", i), "must be key=value with a valid label key (got %q)", s)
			continue
		}
		out[k] = val
	}
	return out
}

func validateRequestID(v *fault.Violations, id string) {
	if len(id) > maxRequestIDLen {
		v.Add("request_id", "at most %d characters", maxRequestIDLen)
	}
}

// validateGovernance checks a run's politeness and consent rules.
func validateGovernance(v *fault.Violations, g *wfv1.GovernanceConfig) {
	if g == nil {
		return
	}
	if n := g.GetMaxActionsPerMinute(); n < 0 || n > 600 {
		v.Add("params.governance.max_actions_per_minute", "must be between 1 and 600, or 0 for the default (got %d)", n)
	}
	if _, ok := wfv1.ConsentPolicy_name[int32(g.GetConsent())]; !ok {
		v.Add("params.governance.consent", "unknown consent policy %d", g.GetConsent())
	}
}
