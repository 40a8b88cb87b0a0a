package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/llm"
)

// outputPages: a price list to extract, and a form that saves in place
// (no navigation, so a claim after the click runs in the same turn).
var outputPages = map[string]string{
	"/prices": `<!doctype html><title>Prices</title><h1>Prices</h1>
<table><tr><td>Apple</td><td>1.20</td></tr><tr><td>Pear</td><td>0.80</td></tr></table>
<a href="/form">Edit</a>`,
	"/form": `<!doctype html><title>Form</title><p id="status">Unsaved</p>
<button onclick="document.getElementById('status').textContent = 'Saved'">Save</button>`,
}

// the rows extractTurn reads, as Result.Output holds them.
var priceRows = []any{map[string]any{"name": "Apple", "price": "1.20"}, map[string]any{"name": "Pear", "price": "0.80"}}

func extractTurn() llm.Turn {
	return llm.Reply("I read the prices.", llm.Call(ToolExtract, map[string]any{"rows": "tr",
		"fields": map[string]string{"name": "td:nth-child(1)", "price": "td:nth-child(2)"}, "reasoning": "read", "confidence": 0.9}))
}

func completeWith(status, reason string, data any) llm.Turn {
	return llm.Reply("Done.", llm.Call(ToolComplete, map[string]any{"status": status, "reason": reason, "data": data}))
}

func outputParams(s *site, m llm.Model) Params {
	p := params(s, m)
	p.StartURL = s.URL + "/prices"
	p.Goal = "Read the prices"
	return p
}

// Run.output is the data of the complete_task call that ended the run,
// else the rows of the last successful extract (that of a previous
// execution of a resumed run included), else nothing.
func TestRunOutput(t *testing.T) {
	t.Parallel()
	answer := map[string]any{"apple": 1.2, "items": []any{"Apple", "Pear"}, "cheap": true}
	tests := []struct {
		name   string
		turns  []llm.Turn
		prior  []map[string]string
		status Status
		want   any
	}{
		{"a success claim's data", []llm.Turn{completeWith("success", "read", answer)}, nil, StatusCompleted, answer},
		{"a failure claim's data", []llm.Turn{completeWith("failed", "no plums", "partial")}, nil, StatusFailed, "partial"},
		{"data wins over an extract", []llm.Turn{extractTurn(), completeWith("success", "read", answer)}, nil, StatusCompleted, answer},
		{"the last extract without data", []llm.Turn{extractTurn(), completeTurn("success", "read")}, nil, StatusCompleted, priceRows},
		{"null data is none", []llm.Turn{extractTurn(), completeWith("success", "read", nil)}, nil, StatusCompleted, priceRows},
		{"the extract when the run hits its step limit", []llm.Turn{extractTurn(), scrollTurn()}, nil, StatusMaxSteps, priceRows},
		{"an extract of this execution wins over the prior one", []llm.Turn{extractTurn(), completeTurn("success", "read")},
			[]map[string]string{{"name": "before"}}, StatusCompleted, priceRows},
		{"the prior extract when this execution has none", []llm.Turn{completeTurn("success", "read")},
			[]map[string]string{{"name": "before"}}, StatusCompleted, []any{map[string]any{"name": "before"}}},
		{"nothing", []llm.Turn{scrollTurn(), completeTurn("success", "read")}, nil, StatusCompleted, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, outputPages)
			p := outputParams(s, llm.NewScripted("controller", tc.turns...))
			p.MaxSteps = 2
			p.PriorExtract = tc.prior
			res, sink := execute(t, runCtx(t), nil, p)
			require.Equal(t, tc.status, res.Status, "%+v", res.Err)
			require.Equal(t, tc.want, res.Output)
			if m, ok := tc.want.(map[string]any); ok {
				last := sink.step(t, res.Steps).Actions
				require.Equal(t, m, last[len(last)-1].Arguments["data"], "the step records the data")
			}
		})
	}
}

// A claim's data counts only when the claim ends the run: data of a
// refused claim is not the output.
func TestRunOutputRefusedClaim(t *testing.T) {
	t.Parallel()
	s := newSite(t, outputPages)
	m := llm.NewScripted("controller", extractTurn(), completeWith("success", "saved", "refused data"), scrollTurn())
	p := outputParams(s, m)
	p.MaxSteps = 3
	p.Criteria.Success = []Indicator{{Name: "saved", Kind: IndicatorText, Value: "Saved"}}
	res, _ := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusMaxSteps, res.Status, "%+v", res.Err)
	require.Equal(t, false, toolResults(t, m.Requests()[2])[0].body["acknowledged"])
	require.Equal(t, priceRows, res.Output)
}

// When the criteria end the run in the turn of a claim, the claim's data
// is the output only when the claim is acknowledged.
func TestRunOutputClaimDecidedByCriteria(t *testing.T) {
	t.Parallel()
	apple := Indicator{Name: "apple", Kind: IndicatorText, Value: "Apple"}
	tests := []struct {
		name    string
		claim   string
		success bool // apple as a success indicator, else as a failure one
		status  Status
		want    any
	}{
		{"success claim, success indicators hold", "success", true, StatusCompleted, "data"},
		{"failure claim, success indicators hold", "failed", true, StatusCompleted, nil},
		{"failure claim, a failure indicator holds", "failed", false, StatusFailed, "data"},
		{"success claim, a failure indicator holds", "success", false, StatusFailed, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, outputPages)
			m := llm.NewScripted("controller", completeWith(tc.claim, "done", "data"))
			p := outputParams(s, m)
			if tc.success {
				p.Criteria.Success = []Indicator{apple}
			} else {
				p.Criteria.Failure = []Indicator{apple}
			}
			res, _ := execute(t, runCtx(t), nil, p)
			require.Equal(t, tc.status, res.Status, "%+v", res.Err)
			require.Equal(t, SourceCriteria, res.Verdict.Source)
			require.Equal(t, tc.want, res.Output)
		})
	}
}

// Data over MaxOutputSize is answered invalid_params, not taken as a
// claim, and not recorded; the model can send less.
func TestRunOutputTooLarge(t *testing.T) {
	t.Parallel()
	s := newSite(t, outputPages)
	big := strings.Repeat("x", MaxOutputSize) // with its quotes, 2 bytes over
	m := llm.NewScripted("controller", completeWith("success", "read", big), completeWith("success", "read", "small"))
	res, sink := execute(t, runCtx(t), nil, outputParams(s, m))
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Equal(t, 2, res.Steps)
	require.Equal(t, "small", res.Output)

	refused := toolResults(t, m.Requests()[1])
	require.Len(t, refused, 1)
	require.True(t, refused[0].IsError)
	require.Equal(t, "invalid_params", refused[0].body["error"])
	require.Contains(t, refused[0].body["message"], "over the limit of 262144")
	act := sink.step(t, 1).Actions[1]
	require.Equal(t, "invalid_params", act.Outcome)
	require.Equal(t, "(262146 bytes, not kept)", act.Arguments["data"])

	// Exactly at the limit is kept.
	s2 := newSite(t, outputPages)
	fits := strings.Repeat("x", MaxOutputSize-2)
	res, _ = execute(t, runCtx(t), nil, outputParams(s2, llm.NewScripted("controller", completeWith("success", "read", fits))))
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Equal(t, fits, res.Output)
}

// An extract's rows are kept as output up to MaxOutputSize: the leading
// rows that fit.
func TestOutputRows(t *testing.T) {
	t.Parallel()
	row := func(n int) map[string]string { return map[string]string{"v": strings.Repeat("a", n)} }
	size := func(v any) int { b, err := json.Marshal(v); require.NoError(t, err); return len(b) }
	third := MaxOutputSize / 3
	require.Len(t, outputRows([]map[string]string{row(third), row(third), row(third)}), 2)
	require.Len(t, outputRows([]map[string]string{row(10), row(MaxOutputSize), row(10)}), 1, "the rows before the first that does not fit")
	require.Equal(t, []any{}, outputRows(nil))
	// Exactly at the limit: [{"v":"…"}] is 10 bytes besides the text.
	fit := outputRows([]map[string]string{row(MaxOutputSize - 10)})
	require.Len(t, fit, 1)
	require.Equal(t, MaxOutputSize, size(fit))
	require.Empty(t, outputRows([]map[string]string{row(MaxOutputSize - 9)}))
}

// Secrets the runner knows never reach the output: not in the claim's
// data (a form secret becomes its placeholder, another value [redacted]),
// not in extracted rows, and not when the redactor learns a value late.
func TestRunOutputRedacted(t *testing.T) {
	t.Parallel()
	const token = "tok-9f8e7d6c5b"
	t.Run("data", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, outputPages)
		m := llm.NewScripted("controller", completeWith("success", "read",
			map[string]any{"token": token, "pw": "s3cret-pw", "list": []any{"x " + token}, token: 1}))
		p := outputParams(s, m)
		p.Secrets = []Secret{{Name: "password", Value: "s3cret-pw", Domains: []string{"127.0.0.1"}}}
		p.Redact = []string{token}
		res, sink := execute(t, runCtx(t), nil, p)
		require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
		require.Equal(t, map[string]any{"token": Redacted, "pw": "{{password}}", "list": []any{"x " + Redacted}, Redacted: 1.0}, res.Output)
		for _, st := range sink.steps() {
			require.NotContains(t, fmt.Sprint(st.Actions), token)
		}
	})
	t.Run("extracted rows", func(t *testing.T) {
		t.Parallel()
		pages := map[string]string{"/prices": strings.Replace(outputPages["/prices"], "Pear", "Pear "+token, 1)}
		s := newSite(t, pages)
		p := outputParams(s, llm.NewScripted("controller", extractTurn(), completeTurn("success", "read")))
		p.Redact = []string{token}
		res, _ := execute(t, runCtx(t), nil, p)
		require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
		require.Equal(t, []any{map[string]any{"name": "Apple", "price": "1.20"}, map[string]any{"name": "Pear " + Redacted, "price": "0.80"}}, res.Output)
	})
	t.Run("a value learnt late", func(t *testing.T) {
		t.Parallel()
		r := NewRedactor(nil, nil)
		res := Result{Output: map[string]any{"k": []any{"a " + token}}}
		require.Equal(t, res, r.Result(res))
		r.Add(token)
		require.Equal(t, map[string]any{"k": []any{"a " + Redacted}}, r.Result(res).Output)
	})
}

// Report indicators are evaluated and recorded after every step with kind
// report, and never change the run's course: a run with only report
// indicators takes the same steps as one with none.
func TestReportIndicators(t *testing.T) {
	t.Parallel()
	paid := Indicator{Name: "paid", Kind: IndicatorURL, Value: `/paid$`, Pattern: regexp.MustCompile(`/paid$`)}
	never := Indicator{Name: "never", Kind: IndicatorText, Value: "no such text anywhere"}
	script := func() *llm.Scripted {
		return llm.NewScripted("controller", clickTurn(t, "link", "Checkout"), clickTurn(t, "button", "Pay now"),
			scrollTurn(), completeTurn("success", "paid"))
	}
	run := func(t *testing.T, report []Indicator) (Result, *recordingSink, *llm.Scripted) {
		s := newSite(t, shopPages)
		m := script()
		p := shopParams(s, m)
		p.Criteria.Report = report
		res, sink := execute(t, runCtx(t), nil, p)
		return res, sink, m
	}
	none, _, noneModel := run(t, nil)
	require.Equal(t, StatusCompleted, none.Status, "%+v", none.Err)
	require.Nil(t, none.Criteria)

	res, sink, m := run(t, []Indicator{paid, never})
	require.Equal(t, none.Status, res.Status, "%+v", res.Err)
	require.Equal(t, none.Steps, res.Steps, "a matching report indicator does not end the run")
	require.Len(t, m.Requests(), len(noneModel.Requests()))
	require.Equal(t, none.Reason, res.Reason)
	require.NotEqual(t, SourceCriteria, res.Verdict.Source, "the judge decided, not the criteria")
	require.Len(t, res.Criteria, 2)
	for _, r := range res.Criteria {
		require.Equal(t, SetReport, r.Set)
		require.Equal(t, res.Steps, r.Step)
		require.Empty(t, r.Err)
	}
	require.True(t, res.Criteria[0].Matched, "on /paid")
	require.False(t, res.Criteria[1].Matched)
	for n, want := range map[int]bool{1: false, 2: true, 3: true, 4: true} {
		st := sink.step(t, n)
		require.Len(t, st.Criteria, 2, "step %d", n)
		require.Equal(t, want, st.Criteria[0].Matched, "step %d", n)
	}
}

// A report indicator next to success indicators: the success indicators
// decide, the report one is only recorded.
func TestReportIndicatorsBesideSuccess(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	m := llm.NewScripted("controller", clickTurn(t, "link", "Checkout"), clickTurn(t, "button", "Pay now"),
		completeTurn("failed", "should not be reached"))
	p := shopParams(s, m)
	p.Criteria.Success = []Indicator{paidIndicators[0]}
	p.Criteria.Report = []Indicator{{Name: "never", Kind: IndicatorElement, Value: "#nothing"}}
	res, _ := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Equal(t, SourceCriteria, res.Verdict.Source)
	require.Contains(t, res.Verdict.Reason, `"url"`)
	require.NotContains(t, res.Verdict.Reason, "never")
	require.Len(t, res.Criteria, 2)
	require.Equal(t, []IndicatorSet{SetSuccess, SetReport}, []IndicatorSet{res.Criteria[0].Set, res.Criteria[1].Set})
}

// fatalAfterClick ends the run after the first click (as a failed re-auth
// would), on the page the click led to.
type fatalAfterClick struct{}

func (fatalAfterClick) BeforeAction(context.Context, *browser.Page, *browser.Action) error {
	return nil
}

func (fatalAfterClick) AfterAction(_ context.Context, _ *browser.Page, act browser.Action, _ *browser.ActionResult) (HookResult, error) {
	if act.Kind == browser.ActionClick {
		return HookResult{}, &Error{Category: CategoryAuthentication, Message: "the session expired"}
	}
	return HookResult{}, nil
}

// The indicators' last results are those of the page as the run left it,
// after its final action, however the run ends.
func TestReportFollowsFinalAction(t *testing.T) {
	t.Parallel()
	saved := Indicator{Name: "saved", Kind: IndicatorText, Value: "Saved"}
	onPay := Indicator{Name: "pay", Kind: IndicatorURL, Value: `/pay$`, Pattern: regexp.MustCompile(`/pay$`)}
	saveAndClaim := func(status string) llm.Turn {
		return answer("save and finish", func(req *llm.Request) []llm.ToolCall {
			return []llm.ToolCall{on(t, req, ToolClick, "button", "Save", nil),
				llm.Call(ToolComplete, map[string]any{"status": status, "reason": "saved"})}
		})
	}
	tests := []struct {
		name   string
		start  string
		turns  func() []llm.Turn
		setup  func(*Params)
		status Status
		report Indicator
		steps  int
		// evaluated is the step of the final action, whose page the
		// last evaluation saw.
		evaluated int
		matched   bool
	}{
		{"a success claim the judge accepts, in the turn of the action", "/form",
			func() []llm.Turn { return []llm.Turn{saveAndClaim("success")} }, nil, StatusCompleted, saved, 1, 1, true},
		{"a failure claim, in the turn of the action", "/form",
			func() []llm.Turn { return []llm.Turn{saveAndClaim("failed")} }, nil, StatusFailed, saved, 1, 1, true},
		{"a success claim the criteria accept", "/form",
			func() []llm.Turn { return []llm.Turn{saveAndClaim("success")} },
			func(p *Params) { p.Criteria.Success = []Indicator{saved} }, StatusCompleted, saved, 1, 1, true},
		{"the step limit", "/form",
			func() []llm.Turn { return []llm.Turn{clickTurn(t, "button", "Save")} },
			func(p *Params) { p.MaxSteps = 1 }, StatusMaxSteps, saved, 1, 1, true},
		{"a hook ending the run after the action", "/shop",
			func() []llm.Turn { return []llm.Turn{clickTurn(t, "link", "Checkout")} },
			func(p *Params) { p.Hooks = fatalAfterClick{} }, StatusError, onPay, 1, 1, true},
		{"a model error on the next turn", "/shop",
			func() []llm.Turn {
				return []llm.Turn{clickTurn(t, "link", "Checkout"), modelError(llm.ErrAuth, "key revoked")}
			}, nil, StatusError, onPay, 2, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pages := maps.Clone(shopPages)
			pages["/form"] = outputPages["/form"]
			s := newSite(t, pages)
			p := params(s, llm.NewScripted("controller", tc.turns()...))
			p.StartURL = s.URL + tc.start
			if tc.setup != nil {
				tc.setup(&p)
			}
			p.Criteria.Report = []Indicator{tc.report}
			res, sink := execute(t, runCtx(t), nil, p)
			require.Equal(t, tc.status, res.Status, "%+v", res.Err)
			require.Equal(t, tc.steps, res.Steps)
			require.NotEmpty(t, res.Criteria, "the indicators were evaluated")
			r := res.Criteria[len(res.Criteria)-1]
			require.Equal(t, SetReport, r.Set)
			require.Equal(t, tc.matched, r.Matched, "%+v", r)
			require.Equal(t, tc.evaluated, r.Step)
			last := sink.step(t, tc.evaluated).Criteria
			require.Equal(t, r, last[len(last)-1], "the final step records the final evaluation")
		})
	}
}
