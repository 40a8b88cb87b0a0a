package runner

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// indicators of each kind that hold on /paid and not on /pay (holds), and
// that hold on neither (never).
var (
	paidIndicators = []Indicator{
		{Name: "url", Kind: IndicatorURL, Value: `/paid$`, Pattern: regexp.MustCompile(`/paid$`)},
		{Name: "title", Kind: IndicatorTitle, Value: `^Order placed$`, Pattern: regexp.MustCompile(`^Order placed$`)},
		{Name: "text", Kind: IndicatorText, Value: "THANK you"},
		{Name: "element", Kind: IndicatorElement, Value: "h1#ok"},
		{Name: "js", Kind: IndicatorJS, Value: `window.order && window.order.status === "paid"`},
	}
)

// Each kind of success indicator completes the run once it holds after a
// step, with a verdict of the criteria; as a failure indicator it fails
// the run naming it.
func TestIndicatorKinds(t *testing.T) {
	t.Parallel()
	for _, ind := range paidIndicators {
		for _, success := range []bool{true, false} {
			name := ind.Name + map[bool]string{true: " success", false: " failure"}[success]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := newSite(t, shopPages)
				m := llm.NewScripted("controller", clickTurn(t, "link", "Checkout"), clickTurn(t, "button", "Pay now"),
					completeTurn("failed", "should not be reached"))
				p := shopParams(s, m)
				if success {
					p.Criteria.Success = []Indicator{ind}
				} else {
					p.Criteria.Failure = []Indicator{ind}
				}
				res, sink := execute(t, runCtx(t), nil, p)
				require.Len(t, m.Requests(), 2, "the run ends after the step where the indicator holds")
				require.NotNil(t, res.Verdict)
				require.Equal(t, SourceCriteria, res.Verdict.Source)
				require.Len(t, res.Criteria, 1)
				r := res.Criteria[0]
				require.True(t, r.Matched, "%+v", r)
				require.Empty(t, r.Err)
				require.Equal(t, 2, r.Step)
				require.Equal(t, map[bool]IndicatorSet{true: SetSuccess, false: SetFailure}[success], r.Set)
				if success {
					require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
					require.True(t, res.Verdict.Done)
				} else {
					require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
					require.True(t, res.Verdict.Failed)
					require.Contains(t, res.Reason, `failure indicator "`+ind.Name+`" holds`)
				}
				first := sink.step(t, 1)
				require.Len(t, first.Criteria, 1)
				require.False(t, first.Criteria[0].Matched, "%s does not hold on /pay", ind.Name)
				require.Equal(t, SourceCriteria, sink.step(t, 2).Verdict.Source, "the step records the verdict")
			})
		}
	}
}

// A success claim is acknowledged only when every success indicator holds:
// the claim on the wrong page is refused, naming the indicator, without
// asking the judge; an indicator that cannot be evaluated does not hold.
func TestCriteriaRefuseFalseSuccess(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	m := llm.NewScripted("controller", clickTurn(t, "link", "Checkout"),
		completeTurn("success", "I paid"), // on /pay: not paid
		completeTurn("failed", "cannot pay"))
	p := shopParams(s, m)
	p.Criteria.Success = []Indicator{paidIndicators[1], {Name: "broken", Kind: IndicatorElement, Value: "[["}}
	res, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
	require.Equal(t, "cannot pay", res.Reason)
	results := toolResults(t, m.Requests()[2])
	require.Len(t, results, 1)
	require.Equal(t, false, results[0].body["acknowledged"])
	require.Contains(t, results[0].body["message"], `success indicators do not hold: "title", "broken"`)
	for _, pr := range sink.promptRuns() {
		require.NotEqual(t, RoleJudge, pr.Role)
	}
	require.Len(t, res.Criteria, 2)
	require.Contains(t, res.Criteria[1].Err, "page script failed")
	require.False(t, res.Criteria[1].Matched)
}

// Once every success indicator holds (and no failure indicator does), the
// run completes; a claim sent after the page changed is not executed.
func TestCriteriaConfirmSuccess(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	pay := answer("pay and claim", func(req *llm.Request) []llm.ToolCall {
		return []llm.ToolCall{on(t, req, ToolClick, "button", "Pay now", nil), llm.Call(ToolComplete, map[string]any{"status": "success", "reason": "paid"})}
	})
	m := llm.NewScripted("controller", clickTurn(t, "link", "Checkout"), pay)
	p := shopParams(s, m)
	p.ActionsPerTurn = 1
	p.Criteria.Success = paidIndicators
	p.Criteria.Failure = []Indicator{{Name: "error page", Kind: IndicatorURL, Value: "/error", Pattern: regexp.MustCompile("/error")}}
	res, _ := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Len(t, res.Criteria, len(paidIndicators)+1)
	for _, r := range res.Criteria {
		require.Equal(t, r.Set == SetSuccess, r.Matched, "%+v", r)
	}
}
