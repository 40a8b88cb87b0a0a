package api

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

const liveSecret = "whsec-0123456789abcdef"

func TestValidateLiveValid(t *testing.T) {
	t.Parallel()
	p := validParams(func(p *wfv1.RunParams) {
		p.Checkpoints = []*wfv1.Checkpoint{
			{Name: "payment", UrlPattern: `/checkout/pay$`},
			{Name: "finish", ElementRole: "button", ElementNamePattern: `(?i)finish cancel`, Repeat: true},
		}
		p.Approval = &wfv1.ApprovalSettings{Timeout: durationpb.New(24 * time.Hour), OnTimeout: wfv1.ApprovalTimeoutPolicy_APPROVAL_TIMEOUT_POLICY_CANCEL}
		p.Completion = &wfv1.CompletionCriteria{
			Success: []*wfv1.Indicator{
				{Name: "title", Condition: &wfv1.Indicator_TitlePattern{TitlePattern: `(?i)cancelled`}},
				{Name: "js", Condition: &wfv1.Indicator_JsExpression{JsExpression: strings.Repeat("1", maxJSExpressionLen)}},
			},
			Failure: []*wfv1.Indicator{{Name: "err", Condition: &wfv1.Indicator_TextPresent{TextPresent: "could not"}}},
			Report: []*wfv1.Indicator{
				{Name: "banner", Condition: &wfv1.Indicator_ElementPresent{ElementPresent: "nav .avatar"}},
				{Condition: &wfv1.Indicator_UrlPattern{UrlPattern: `/done$`}},
			},
		}
		p.Webhook = &wfv1.RunWebhook{Url: "https://hooks.example.com/wayfinder", Secret: liveSecret, OnApproval: true}
	})
	_, err := validateParams(p, testMaxRunTimeout)
	require.NoError(t, err)
}

// Report indicators alone, and every list full up to the combined limit,
// are valid.
func TestValidateReportIndicators(t *testing.T) {
	t.Parallel()
	text := func(n int) []*wfv1.Indicator {
		out := make([]*wfv1.Indicator, n)
		for i := range out {
			out[i] = &wfv1.Indicator{Condition: &wfv1.Indicator_TextPresent{TextPresent: "x"}}
		}
		return out
	}
	for name, c := range map[string]*wfv1.CompletionCriteria{
		"report only":        {Report: text(1)},
		"full report list":   {Report: text(maxIndicators)},
		"at the total limit": {Success: text(maxIndicators), Report: text(maxAllIndicators - maxIndicators)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := validateParams(validParams(func(p *wfv1.RunParams) { p.Completion = c }), testMaxRunTimeout)
			require.NoError(t, err)
		})
	}
}

func TestValidateLiveErrors(t *testing.T) {
	t.Parallel()
	ind := func(i *wfv1.Indicator) func(p *wfv1.RunParams) {
		return func(p *wfv1.RunParams) { p.Completion = &wfv1.CompletionCriteria{Success: []*wfv1.Indicator{i}} }
	}
	cp := func(c *wfv1.Checkpoint) func(p *wfv1.RunParams) {
		return func(p *wfv1.RunParams) { p.Checkpoints = []*wfv1.Checkpoint{c} }
	}
	approval := func(d time.Duration, policy wfv1.ApprovalTimeoutPolicy) func(p *wfv1.RunParams) {
		return func(p *wfv1.RunParams) {
			p.Approval = &wfv1.ApprovalSettings{Timeout: durationpb.New(d), OnTimeout: policy}
		}
	}
	hook := func(url, secret string) func(p *wfv1.RunParams) {
		return func(p *wfv1.RunParams) { p.Webhook = &wfv1.RunWebhook{Url: url, Secret: secret} }
	}
	many := func(n int) []*wfv1.Indicator {
		out := make([]*wfv1.Indicator, n)
		for i := range out {
			out[i] = &wfv1.Indicator{Condition: &wfv1.Indicator_TextPresent{TextPresent: "x"}}
		}
		return out
	}
	report := func(i *wfv1.Indicator) func(p *wfv1.RunParams) {
		return func(p *wfv1.RunParams) { p.Completion = &wfv1.CompletionCriteria{Report: []*wfv1.Indicator{i}} }
	}
	tests := []struct {
		name  string
		edit  func(p *wfv1.RunParams)
		field string
	}{
		{"checkpoint without condition", cp(&wfv1.Checkpoint{Name: "x"}), "params.checkpoints[0]"},
		{"checkpoint url pattern not RE2", cp(&wfv1.Checkpoint{UrlPattern: `(?<=a)b`}), "params.checkpoints[0].url_pattern"},
		{"checkpoint title pattern unbalanced", cp(&wfv1.Checkpoint{TitlePattern: `(`}), "params.checkpoints[0].title_pattern"},
		{"checkpoint element name pattern", cp(&wfv1.Checkpoint{ElementNamePattern: `[`}), "params.checkpoints[0].element_name_pattern"},
		{"checkpoint name too long", cp(&wfv1.Checkpoint{Name: strings.Repeat("n", 201), UrlPattern: "x"}), "params.checkpoints[0].name"},
		{"too many checkpoints", func(p *wfv1.RunParams) {
			for range maxCheckpoints + 1 {
				p.Checkpoints = append(p.Checkpoints, &wfv1.Checkpoint{UrlPattern: "x"})
			}
		}, "params.checkpoints"},
		{"approval timeout too short", approval(500*time.Millisecond, 0), "params.approval.timeout"},
		{"approval timeout too long", approval(25*time.Hour, 0), "params.approval.timeout"},
		{"unknown timeout policy", approval(time.Minute, 9), "params.approval.on_timeout"},
		{"indicator without condition", ind(&wfv1.Indicator{Name: "x"}), "params.completion.success[0]"},
		{"indicator url pattern invalid", ind(&wfv1.Indicator{Condition: &wfv1.Indicator_UrlPattern{UrlPattern: "("}}), "params.completion.success[0].url_pattern"},
		{"indicator empty title pattern", ind(&wfv1.Indicator{Condition: &wfv1.Indicator_TitlePattern{}}), "params.completion.success[0].title_pattern"},
		{"indicator empty selector", ind(&wfv1.Indicator{Condition: &wfv1.Indicator_ElementPresent{}}), "params.completion.success[0].element_present"},
		{"js expression too long", ind(&wfv1.Indicator{Condition: &wfv1.Indicator_JsExpression{JsExpression: strings.Repeat("1", maxJSExpressionLen+1)}}),
			"params.completion.success[0].js_expression"},
		{"too many failure indicators", func(p *wfv1.RunParams) {
			p.Completion = &wfv1.CompletionCriteria{Failure: many(maxIndicators + 1)}
		}, "params.completion.failure"},
		{"report indicator without condition", report(&wfv1.Indicator{Name: "x"}), "params.completion.report[0]"},
		{"report indicator title pattern invalid", report(&wfv1.Indicator{Condition: &wfv1.Indicator_TitlePattern{TitlePattern: "["}}),
			"params.completion.report[0].title_pattern"},
		{"report indicator empty text", report(&wfv1.Indicator{Condition: &wfv1.Indicator_TextPresent{}}), "params.completion.report[0].text_present"},
		{"report indicator name too long", report(&wfv1.Indicator{Name: strings.Repeat("n", maxLiveNameLen+1),
			Condition: &wfv1.Indicator_TextPresent{TextPresent: "x"}}), "params.completion.report[0].name"},
		{"too many report indicators", func(p *wfv1.RunParams) {
			p.Completion = &wfv1.CompletionCriteria{Report: many(maxIndicators + 1)}
		}, "params.completion.report"},
		{"too many indicators in all", func(p *wfv1.RunParams) {
			p.Completion = &wfv1.CompletionCriteria{Success: many(maxIndicators), Failure: many(1), Report: many(maxIndicators)}
		}, "params.completion"},
		{"webhook without url", hook("", liveSecret), "params.webhook.url"},
		{"webhook ftp url", hook("ftp://hooks.example.com", liveSecret), "params.webhook.url"},
		{"webhook url without host", hook("https:///x", liveSecret), "params.webhook.url"},
		{"webhook secret too short", hook("https://hooks.example.com", "short-secret"), "params.webhook.secret"},
		{"webhook secret too long", hook("https://hooks.example.com", strings.Repeat("s", maxWebhookSecretLen+1)), "params.webhook.secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := validateParams(validParams(tc.edit), testMaxRunTimeout)
			require.Equal(t, []string{tc.field}, violationFields(t, err))
			require.NotContains(t, err.Error(), "short-secret", "a secret is never quoted")
		})
	}
}
