package api

import (
	"fmt"
	"net/url"
	"regexp"
	"time"
	"unicode/utf8"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// Limits of human checkpoints, completion criteria and the run webhook.
const (
	maxCheckpoints      = 20
	maxIndicators       = 20 // per list (success, failure, report)
	maxAllIndicators    = 40 // all lists together: each is evaluated after every step
	maxLiveNameLen      = 200
	maxPatternLen       = 1000
	maxJSExpressionLen  = 2000
	minApprovalTimeout  = time.Second
	maxApprovalTimeout  = 24 * time.Hour
	minWebhookSecretLen = 16
	maxWebhookSecretLen = 256
	maxApprovalMessage  = 2000
)

// validateLive checks a run's checkpoints, approval settings, completion
// criteria and webhook.
func validateLive(v *fault.Violations, p *wfv1.RunParams) {
	if n := len(p.GetCheckpoints()); n > maxCheckpoints {
		v.Add("params.checkpoints", "at most %d checkpoints (got %d)", maxCheckpoints, n)
	} else {
		for i, c := range p.GetCheckpoints() {
			validateCheckpoint(v, fmt.Sprintf("params.checkpoints[%d]", i), c)
		}
	}
	if a := p.GetApproval(); a != nil {
		if d := a.GetTimeout(); d != nil {
			if err := d.CheckValid(); err != nil || d.AsDuration() < minApprovalTimeout || d.AsDuration() > maxApprovalTimeout {
				v.Add("params.approval.timeout", "must be between %s and %s", minApprovalTimeout, maxApprovalTimeout)
			}
		}
		if _, ok := wfv1.ApprovalTimeoutPolicy_name[int32(a.GetOnTimeout())]; !ok {
			v.Add("params.approval.on_timeout", "unknown approval timeout policy %d", a.GetOnTimeout())
		}
	}
	c := p.GetCompletion()
	if n := len(c.GetSuccess()) + len(c.GetFailure()) + len(c.GetReport()); n > maxAllIndicators {
		v.Add("params.completion", "at most %d indicators in all (got %d)", maxAllIndicators, n)
	}
	for _, set := range []struct {
		field string
		list  []*wfv1.Indicator
	}{
		{"params.completion.success", c.GetSuccess()},
		{"params.completion.failure", c.GetFailure()},
		{"params.completion.report", c.GetReport()},
	} {
		if len(set.list) > maxIndicators {
			v.Add(set.field, "at most %d indicators (got %d)", maxIndicators, len(set.list))
			continue
		}
		for i, ind := range set.list {
			validateIndicator(v, fmt.Sprintf("%s[%d]", set.field, i), ind)
		}
	}
	if w := p.GetWebhook(); w != nil {
		validateWebhook(v, w)
	}
}

func validateCheckpoint(v *fault.Violations, field string, c *wfv1.Checkpoint) {
	if utf8.RuneCountInString(c.GetName()) > maxLiveNameLen {
		v.Add(field+".name", "at most %d characters", maxLiveNameLen)
	}
	if c.GetUrlPattern() == "" && c.GetTitlePattern() == "" && c.GetElementRole() == "" && c.GetElementNamePattern() == "" {
		v.Add(field, "set at least one condition (url_pattern, title_pattern, element_role, element_name_pattern)")
	}
	validatePattern(v, field+".url_pattern", c.GetUrlPattern())
	validatePattern(v, field+".title_pattern", c.GetTitlePattern())
	validatePattern(v, field+".element_name_pattern", c.GetElementNamePattern())
	if len(c.GetElementRole()) > 64 {
		v.Add(field+".element_role", "at most 64 characters")
	}
}

func validateIndicator(v *fault.Violations, field string, ind *wfv1.Indicator) {
	if utf8.RuneCountInString(ind.GetName()) > maxLiveNameLen {
		v.Add(field+".name", "at most %d characters", maxLiveNameLen)
	}
	switch c := ind.GetCondition().(type) {
	case *wfv1.Indicator_UrlPattern:
		validateRequiredPattern(v, field+".url_pattern", c.UrlPattern)
	case *wfv1.Indicator_TitlePattern:
		validateRequiredPattern(v, field+".title_pattern", c.TitlePattern)
	case *wfv1.Indicator_TextPresent:
		validateRequiredText(v, field+".text_present", c.TextPresent, maxPatternLen)
	case *wfv1.Indicator_ElementPresent:
		validateRequiredText(v, field+".element_present", c.ElementPresent, maxPatternLen)
	case *wfv1.Indicator_JsExpression:
		validateRequiredText(v, field+".js_expression", c.JsExpression, maxJSExpressionLen)
	default:
		v.Add(field, "set exactly one condition (url_pattern, title_pattern, text_present, element_present, js_expression)")
	}
}

func validateRequiredText(v *fault.Violations, field, s string, limit int) {
	switch {
	case s == "":
		v.Add(field, "must not be empty")
	case utf8.RuneCountInString(s) > limit:
		v.Add(field, "at most %d characters", limit)
	}
}

func validateRequiredPattern(v *fault.Violations, field, pattern string) {
	if pattern == "" {
		v.Add(field, "must not be empty")
		return
	}
	validatePattern(v, field, pattern)
}

// validatePattern checks an optional RE2 regular expression.
func validatePattern(v *fault.Violations, field, pattern string) {
	if pattern == "" {
		return
	}
	if len(pattern) > maxPatternLen {
		v.Add(field, "at most %d characters", maxPatternLen)
		return
	}
	if _, err := regexp.Compile(pattern); err != nil {
		v.Add(field, "not an RE2 regular expression: %v", err)
	}
}

// validateWebhook checks the run webhook. The secret is never quoted.
func validateWebhook(v *fault.Violations, w *wfv1.RunWebhook) {
	const field = "params.webhook"
	raw := w.GetUrl()
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		v.Add(field+".url", "a URL is required")
	case len(raw) > maxURLLen:
		v.Add(field+".url", "at most %d characters", maxURLLen)
	case err != nil:
		v.Add(field+".url", "not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		v.Add(field+".url", "must be an absolute http or https URL (got scheme %q)", u.Scheme)
	case u.Hostname() == "":
		v.Add(field+".url", "must name a host")
	case u.User != nil:
		v.Add(field+".url", "must not contain credentials (user:password@)")
	}
	if n := utf8.RuneCountInString(w.GetSecret()); n < minWebhookSecretLen || n > maxWebhookSecretLen {
		v.Add(field+".secret", "must be %d-%d characters (got %d)", minWebhookSecretLen, maxWebhookSecretLen, n)
	}
}
