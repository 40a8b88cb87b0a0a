package runner

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/wayfinder/wayfinder/internal/judge"
)

// IndicatorKind names the condition of an Indicator.
type IndicatorKind string

// Indicator kinds.
const (
	// IndicatorURL matches Pattern against the page URL.
	IndicatorURL IndicatorKind = "url_pattern"
	// IndicatorTitle matches Pattern against the page title.
	IndicatorTitle IndicatorKind = "title_pattern"
	// IndicatorText looks for Value in the page's visible text
	// (case-insensitive).
	IndicatorText IndicatorKind = "text_present"
	// IndicatorElement looks for a visible element matching the CSS
	// selector Value.
	IndicatorElement IndicatorKind = "element_present"
	// IndicatorJS evaluates the JavaScript expression Value in the page;
	// truthy matches (bounded to 2s).
	IndicatorJS IndicatorKind = "js_expression"
)

// Indicator is one observable condition of the page.
type Indicator struct {
	// Name is shown in results.
	Name string
	Kind IndicatorKind
	// Value is the condition as given: the pattern, text, selector or
	// expression.
	Value string
	// Pattern is Value compiled, for IndicatorURL and IndicatorTitle.
	Pattern *regexp.Regexp
}

// Criteria are a run's declared outcomes (seed 002 §1.7).
type Criteria struct {
	// Success must all hold for a claimed success to be acknowledged;
	// when all hold after a step the run completes.
	Success []Indicator
	// Failure: any that holds after a step ends the run FAILED.
	Failure []Indicator
	// Report are evaluated and recorded like the others but never change
	// the run's course: what a test's final-page oracles read.
	Report []Indicator
}

func (c Criteria) empty() bool {
	return len(c.Success) == 0 && len(c.Failure) == 0 && len(c.Report) == 0
}

// IndicatorSet names the list of Criteria an indicator belongs to; its
// value is the kind Run.criteria records.
type IndicatorSet string

// Indicator sets.
const (
	SetSuccess IndicatorSet = "success"
	SetFailure IndicatorSet = "failure"
	SetReport  IndicatorSet = "report"
)

// IndicatorResult is an indicator's evaluation after a step.
type IndicatorResult struct {
	Indicator Indicator
	// Set is the list the indicator belongs to.
	Set     IndicatorSet
	Matched bool
	// Err says why it could not be evaluated (an invalid selector, a
	// script error); it did not match.
	Err  string
	Step int
}

// SourceCriteria is the Source of a verdict the completion criteria gave.
const SourceCriteria = "criteria"

// criteriaCheck is the evaluation of the run's criteria after a step.
type criteriaCheck struct {
	results []IndicatorResult
	// allSuccess: there are success indicators and all of them hold.
	allSuccess bool
	// unmet names the success indicators that do not hold.
	unmet []string
	// failed is the first failure indicator that holds, nil when none.
	failed *IndicatorResult
}

// checkCriteria evaluates the run's indicators on the current page, records
// the results with the step and returns them; nil when the run declares
// none. Report indicators are recorded only: they take no part in the
// decision fields.
func (ru *run) checkCriteria() *criteriaCheck {
	c := ru.p.Criteria
	if c.empty() || ru.obs == nil {
		return nil
	}
	ru.criteriaStale = false
	check := &criteriaCheck{}
	for _, set := range []struct {
		list []Indicator
		set  IndicatorSet
	}{{c.Success, SetSuccess}, {c.Failure, SetFailure}, {c.Report, SetReport}} {
		for _, ind := range set.list {
			r := IndicatorResult{Indicator: ind, Set: set.set, Step: ru.step}
			matched, err := ru.evalIndicator(ind)
			if err != nil {
				r.Err = ru.redact.String(err.Error())
			}
			r.Matched = matched && err == nil
			check.results = append(check.results, r)
		}
	}
	check.allSuccess = len(c.Success) > 0
	for i := range check.results {
		r := &check.results[i]
		switch {
		case r.Set == SetSuccess && !r.Matched:
			check.allSuccess = false
			check.unmet = append(check.unmet, indicatorName(r.Indicator))
		case r.Set == SetFailure && r.Matched && check.failed == nil:
			check.failed = r
		}
	}
	ru.criteria = check.results
	ru.rec.Criteria = check.results
	return check
}

// finalCriteria evaluates the indicators once more, for the record only,
// when the run ends on a page observed since their last evaluation (a hook
// or a checkpoint ended the turn before it, a browser restart or a refused
// claim cut the turn short before the step limit, a person handed the
// page back): the last results are those of the page as the run left it.
// An interrupted run, or one whose browser is gone, keeps its last
// evaluation.
func (ru *run) finalCriteria(res Result) {
	if !ru.criteriaStale || ru.rec == nil || res.Status == StatusInterrupted || ru.ctx.Err() != nil {
		return
	}
	select {
	case <-ru.b.Done():
		return
	default:
	}
	ru.checkCriteria()
}

// evalIndicator evaluates one indicator on the current page.
func (ru *run) evalIndicator(ind Indicator) (bool, error) {
	snap := ru.obs.snap
	switch ind.Kind {
	case IndicatorURL:
		return ind.Pattern != nil && ind.Pattern.MatchString(snap.Page.URL), nil
	case IndicatorTitle:
		return ind.Pattern != nil && ind.Pattern.MatchString(snap.Page.Title), nil
	}
	if ru.page == nil {
		return false, fmt.Errorf("no page to evaluate on")
	}
	bctx, cancel := ru.browserCtx()
	defer cancel()
	var fn func(context.Context, string) (bool, error)
	switch ind.Kind {
	case IndicatorText:
		fn = ru.page.TextPresent
	case IndicatorElement:
		fn = ru.page.ElementPresent
	case IndicatorJS:
		fn = ru.page.Truthy
	default:
		return false, fmt.Errorf("unknown indicator kind %q", ind.Kind)
	}
	return fn(bctx, ind.Value)
}

func indicatorName(ind Indicator) string {
	if ind.Name != "" {
		return strconvQuote(ind.Name)
	}
	return fmt.Sprintf("%s %q", ind.Kind, ind.Value)
}

// criteriaVerdict records a verdict of the criteria with the step and as
// the run's verdict, and reports it like the judge's.
func (ru *run) criteriaVerdict(v judge.Verdict) *judge.Verdict {
	v.Source, v.Confidence = SourceCriteria, 1
	ru.verdict = &v
	ru.rec.Verdict = &v
	ru.note(Event{Kind: EventJudgeVerdict, Step: ru.step, Verdict: &v, Message: v.Reason})
	return &v
}

// decideByCriteria ends the run when the criteria decide it after a step: a
// failure indicator holds (FAILED, naming it), or every success indicator
// holds (COMPLETED). A claim made in the same turn is answered here.
func (ru *run) decideByCriteria(t *turn, check *criteriaCheck, out *executed) (Result, bool) {
	if check == nil {
		return Result{}, false
	}
	claimReason := ""
	if out.claim != nil {
		claimReason = out.claim.Reason
	}
	switch {
	case check.failed != nil:
		name := indicatorName(check.failed.Indicator)
		v := ru.criteriaVerdict(judge.Verdict{Failed: true, Reason: "the failure indicator " + name + " holds"})
		if out.claim != nil {
			ack := out.claim.Status == "failed"
			ru.answer(t, out.claimCall, map[string]any{"acknowledged": ack, "message": "the run ends: " + v.Reason}, !ack)
		}
		reason := v.Reason
		if claimReason != "" && out.claim.Status == "failed" {
			reason += "; " + claimReason
		}
		return Result{Status: StatusFailed, Verdict: v, Reason: reason}, true
	case check.allSuccess:
		names := make([]string, 0, len(ru.p.Criteria.Success))
		for _, ind := range ru.p.Criteria.Success {
			names = append(names, indicatorName(ind))
		}
		v := ru.criteriaVerdict(judge.Verdict{Done: true, Reason: "the success indicators hold: " + strings.Join(names, ", ")})
		if out.claim != nil {
			ack := out.claim.Status == "success"
			msg := ""
			if !ack {
				msg = "the run's success indicators hold; the goal is met"
			}
			ru.answer(t, out.claimCall, map[string]any{"acknowledged": ack, "message": msg}, !ack)
		}
		reason := v.Reason
		if claimReason != "" && out.claim.Status == "success" {
			reason = claimReason
		}
		return Result{Status: StatusCompleted, Verdict: v, Reason: reason}, true
	}
	return Result{}, false
}

// unmetMessage tells the model why a success claim is not acknowledged.
func (c *criteriaCheck) unmetMessage() string {
	return "Not confirmed: the run's success indicators do not hold: " + strings.Join(c.unmet, ", ") +
		". Continue working on the goal, or call complete_task with status failed if it cannot be achieved."
}
