package runner

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/llm"
)

// shopPages is a checkout: /shop links to /pay, whose button posts to
// /paid; /error is where a failed payment lands.
var shopPages = map[string]string{
	"/shop": `<!doctype html><title>Shop</title><h1>Shop</h1><a href="/pay">Checkout</a>`,
	"/pay": `<!doctype html><title>Confirm payment</title><h1>Confirm</h1>
<form method="post" action="/paid"><button>Pay now</button></form><a href="/shop">Back to shop</a>`,
	"/paid":  `<!doctype html><title>Order placed</title><h1 id="ok">Thank you</h1><script>window.order = {status: "paid"}</script>`,
	"/error": `<!doctype html><title>Error</title><p>Payment could not be processed</p><a href="/shop">Back to shop</a>`,
}

// humanSink answers approval requests with answer and records them.
type humanSink struct {
	recordingSink
	answer func(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error)
	// resumed, when set, is the request that was open when the run
	// stopped on another worker, with its answer.
	resumed *struct {
		req ApprovalRequest
		ans ApprovalAnswer
	}

	hmu      sync.Mutex
	requests []ApprovalRequest
}

func (s *humanSink) RequestApproval(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
	s.hmu.Lock()
	s.requests = append(s.requests, req)
	s.hmu.Unlock()
	return s.answer(ctx, req)
}

func (s *humanSink) ResumeApproval(context.Context) (ApprovalRequest, ApprovalAnswer, bool, error) {
	if s.resumed == nil {
		return ApprovalRequest{}, ApprovalAnswer{}, false, nil
	}
	return s.resumed.req, s.resumed.ans, true, nil
}

func (s *humanSink) asked() []ApprovalRequest {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	return append([]ApprovalRequest(nil), s.requests...)
}

// answers answers the requests in turn.
func answers(list ...ApprovalAnswer) func(context.Context, ApprovalRequest) (ApprovalAnswer, error) {
	var mu sync.Mutex
	return func(context.Context, ApprovalRequest) (ApprovalAnswer, error) {
		mu.Lock()
		defer mu.Unlock()
		a := list[0]
		list = list[1:]
		return a, nil
	}
}

// shopParams is a run that starts at /shop with the judge out of the way.
func shopParams(s *site, m llm.Model, cps ...Checkpoint) Params {
	p := params(s, m)
	p.StartURL = s.URL + "/shop"
	p.Goal = "Buy the item"
	p.JudgeFrequency = judge.Frequency{EveryN: 1000}
	p.Checkpoints = cps
	return p
}

func runWith(t *testing.T, p Params, sink Sink) Result {
	t.Helper()
	res, err := (&Runner{Retry: fastRetry}).Run(runCtx(t), newLeasedBrowser(t, sharedPool(t)), p, sink)
	require.NoError(t, err)
	return res
}

func TestCheckpointTriggers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cp   Checkpoint
	}{
		{"url", Checkpoint{Name: "payment", URL: regexp.MustCompile(`/pay$`)}},
		{"title", Checkpoint{Name: "payment", Title: regexp.MustCompile(`(?i)confirm payment`)}},
		{"element role and name", Checkpoint{Name: "payment", ElementRole: "button", ElementName: regexp.MustCompile(`(?i)^pay`)}},
		{"every condition", Checkpoint{Name: "payment", URL: regexp.MustCompile(`/pay`), Title: regexp.MustCompile(`Confirm`),
			ElementName: regexp.MustCompile(`Pay now`)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, shopPages)
			m := llm.NewScripted("controller", clickTurn(t, "link", "Checkout"), clickTurn(t, "button", "Pay now"),
				completeTurn("failed", "stop"))
			sink := &humanSink{answer: answers(ApprovalAnswer{Approved: true, Message: "go ahead"})}
			res := runWith(t, shopParams(s, m, tc.cp), sink)
			require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
			asked := sink.asked()
			require.Len(t, asked, 1)
			require.Equal(t, SourceCheckpoint, asked[0].Source)
			require.Equal(t, "payment", asked[0].Action)
			require.Equal(t, 1, asked[0].Step)
			require.Equal(t, s.URL+"/pay", asked[0].URL)
			require.NotEmpty(t, asked[0].Screenshot, "the approver sees the page")
			require.Equal(t, 1, s.hit("POST /paid"), "approved: the run goes on")
			reqs := m.Requests()
			require.Contains(t, requestText(reqs[1]), `Checkpoint "payment": a human approved`)
			require.Contains(t, requestText(reqs[1]), "go ahead")
			st := sink.step(t, 1)
			cp := st.Actions[len(st.Actions)-1]
			require.Equal(t, "checkpoint", cp.Tool)
			require.Equal(t, "ok", cp.Outcome)
		})
	}
}

// A checkpoint that does not match never pauses the run, and one that was
// approved does not pause it again unless it repeats.
func TestCheckpointOncePerRun(t *testing.T) {
	t.Parallel()
	for _, repeat := range []bool{false, true} {
		t.Run(map[bool]string{false: "once", true: "repeat"}[repeat], func(t *testing.T) {
			t.Parallel()
			s := newSite(t, shopPages)
			m := llm.NewScripted("controller", clickTurn(t, "link", "Checkout"), clickTurn(t, "link", "Back to shop"),
				clickTurn(t, "link", "Checkout"), completeTurn("failed", "stop"))
			never := Checkpoint{Name: "never", Title: regexp.MustCompile(`Nowhere`)}
			cp := Checkpoint{Name: "payment", URL: regexp.MustCompile(`/pay$`), Repeat: repeat}
			sink := &humanSink{answer: answers(ApprovalAnswer{Approved: true}, ApprovalAnswer{Approved: true})}
			res := runWith(t, shopParams(s, m, never, cp), sink)
			require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
			want := 1
			if repeat {
				want = 2
			}
			require.Len(t, sink.asked(), want)
		})
	}
}

// A rejected checkpoint tells the model why, and guards its page: acting on
// it anyway needs the human again, and a second rejection refuses the action.
func TestCheckpointRejected(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	m := llm.NewScripted("controller", clickTurn(t, "link", "Checkout"), clickTurn(t, "button", "Pay now"),
		completeTurn("failed", "stop"))
	sink := &humanSink{answer: answers(
		ApprovalAnswer{Message: "not with this card"},
		ApprovalAnswer{Message: "I said no"},
	)}
	res := runWith(t, shopParams(s, m, Checkpoint{Name: "payment", URL: regexp.MustCompile(`/pay$`)}), sink)
	require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
	require.Zero(t, s.hit("POST /paid"), "the rejected checkpoint's button was never pressed")
	asked := sink.asked()
	require.Len(t, asked, 2)
	require.Contains(t, asked[1].Action, "browser_click")

	reqs := m.Requests()
	text := requestText(reqs[1])
	require.Contains(t, text, `Checkpoint "payment": human_rejected`)
	require.Contains(t, text, "User feedback: not with this card")
	results := toolResults(t, reqs[2])
	require.Len(t, results, 1)
	require.True(t, results[0].IsError)
	require.Equal(t, "human_rejected", results[0].body["error"])
	require.Equal(t, "User feedback: I said no", results[0].body["message"])
	st := sink.step(t, 2)
	require.Equal(t, "human_rejected", st.Actions[len(st.Actions)-1].Outcome)
}

func TestRequestHumanApproval(t *testing.T) {
	t.Parallel()
	approval := llm.Call(ToolApproval, map[string]any{"action": "pay 42 EUR", "reason": "it costs money"})
	tests := []struct {
		name   string
		answer ApprovalAnswer
		check  func(t *testing.T, r decodedResult, res Result)
	}{
		{"approved", ApprovalAnswer{Approved: true, Message: "fine"}, func(t *testing.T, r decodedResult, res Result) {
			require.False(t, r.IsError)
			require.Equal(t, true, r.body["approved"])
			require.Equal(t, "fine", r.body["message"])
		}},
		{"rejected", ApprovalAnswer{Message: "use the company card"}, func(t *testing.T, r decodedResult, res Result) {
			require.True(t, r.IsError)
			require.Equal(t, false, r.body["approved"])
			require.Equal(t, "human_rejected", r.body["error"])
			require.Equal(t, "User feedback: use the company card", r.body["message"])
		}},
		{"timeout rejects", ApprovalAnswer{TimedOut: true, Message: "no answer within 1s"}, func(t *testing.T, r decodedResult, res Result) {
			require.Equal(t, "human_rejected", r.body["error"])
			require.Equal(t, "no answer within 1s", r.body["message"])
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, shopPages)
			m := llm.NewScripted("controller", llm.Reply("ask first", approval), completeTurn("failed", "stop"))
			sink := &humanSink{answer: answers(tc.answer)}
			res := runWith(t, shopParams(s, m), sink)
			require.Equal(t, StatusFailed, res.Status)
			asked := sink.asked()
			require.Len(t, asked, 1)
			require.Equal(t, ApprovalRequest{Source: SourceModel, Action: "pay 42 EUR", Reason: "it costs money", Step: 1,
				URL: s.URL + "/shop", Screenshot: asked[0].Screenshot}, asked[0])
			results := toolResults(t, m.Requests()[1])
			require.Len(t, results, 1)
			tc.check(t, results[0], res)
		})
	}
}

// The FAIL and CANCEL timeout policies end the run, at a checkpoint as at a
// request of the model's.
func TestApprovalTimeoutEndsRun(t *testing.T) {
	t.Parallel()
	for _, end := range []Status{StatusFailed, StatusCancelled} {
		for _, source := range []string{SourceModel, SourceCheckpoint} {
			t.Run(end.String()+" "+source, func(t *testing.T) {
				t.Parallel()
				s := newSite(t, shopPages)
				first := clickTurn(t, "link", "Checkout")
				var cps []Checkpoint
				if source == SourceModel {
					first = llm.Reply("ask", llm.Call(ToolApproval, map[string]any{"action": "pay", "reason": "money"}))
				} else {
					cps = append(cps, Checkpoint{Name: "payment", URL: regexp.MustCompile(`/pay$`)})
				}
				m := llm.NewScripted("controller", first)
				sink := &humanSink{answer: answers(ApprovalAnswer{TimedOut: true, End: end, Message: "no answer within 1s"})}
				res := runWith(t, shopParams(s, m, cps...), sink)
				require.Equal(t, end, res.Status)
				require.Equal(t, "no answer within 1s", res.Reason)
				require.Len(t, m.Requests(), 1, "the model is not asked again")
			})
		}
	}
}

// A run interrupted while it waits for a human stops at once.
func TestApprovalInterrupted(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	m := llm.NewScripted("controller", clickTurn(t, "link", "Checkout"))
	ctx, cancel := context.WithCancel(runCtx(t))
	sink := &humanSink{answer: func(ctx context.Context, _ ApprovalRequest) (ApprovalAnswer, error) {
		cancel()
		<-ctx.Done()
		return ApprovalAnswer{}, ctx.Err()
	}}
	p := shopParams(s, m, Checkpoint{Name: "payment", URL: regexp.MustCompile(`/pay$`)})
	res, err := (&Runner{Retry: fastRetry}).Run(ctx, newLeasedBrowser(t, sharedPool(t)), p, sink)
	require.NoError(t, err)
	require.Equal(t, StatusInterrupted, res.Status)
}

// A resumed run waits for the approval its previous worker left open
// instead of asking again, and tells the model the answer.
func TestResumedApproval(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	cp := Checkpoint{Name: "payment", URL: regexp.MustCompile(`/pay$`)}
	m := llm.NewScripted("controller", clickTurn(t, "button", "Pay now"), completeTurn("failed", "stop"))
	sink := &humanSink{answer: answers()}
	sink.resumed = &struct {
		req ApprovalRequest
		ans ApprovalAnswer
	}{ApprovalRequest{Source: SourceCheckpoint, Action: "payment"}, ApprovalAnswer{Approved: true, Message: "ok now"}}
	p := shopParams(s, m, cp)
	p.StartURL = s.URL + "/pay" // the checkpoint's page: approved already, not asked again
	res := runWith(t, p, sink)
	require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
	require.Empty(t, sink.asked())
	require.Equal(t, 1, s.hit("POST /paid"))
	require.Contains(t, requestText(m.Requests()[0]), `paused for a human at the checkpoint "payment": approved. Their message: ok now`)
}

// Hooks ask through AskHuman (the consent policy ASK); the request carries
// the run's step and page.
type askingHooks struct{ answers []ApprovalAnswer }

func (h *askingHooks) BeforeAction(context.Context, *browser.Page, *browser.Action) error { return nil }

func (h *askingHooks) AfterAction(ctx context.Context, _ *browser.Page, act browser.Action, _ *browser.ActionResult) (HookResult, error) {
	if act.Kind != browser.ActionClick {
		return HookResult{}, nil
	}
	ans, err := AskHuman(ctx, ApprovalRequest{Source: SourceConsent, Action: "accept the cookie banner", Reason: "consent ASK"})
	h.answers = append(h.answers, ans)
	return HookResult{}, err
}

func TestAskHumanFromHook(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	m := llm.NewScripted("controller", clickTurn(t, "link", "Checkout"), completeTurn("failed", "stop"))
	sink := &humanSink{answer: answers(ApprovalAnswer{TimedOut: true, End: StatusCancelled, Message: "no answer within 1s"})}
	hooks := &askingHooks{}
	p := shopParams(s, m)
	p.Hooks = hooks
	res := runWith(t, p, sink)
	require.Equal(t, StatusCancelled, res.Status, "the timeout policy of a hook's request ends the run")
	asked := sink.asked()
	require.Len(t, asked, 1)
	require.Equal(t, SourceConsent, asked[0].Source)
	require.Equal(t, 1, asked[0].Step)
	require.Len(t, m.Requests(), 1)

	ans, err := AskHuman(context.Background(), ApprovalRequest{Action: "x"})
	require.NoError(t, err)
	require.False(t, ans.Approved, "outside a run nobody approves")
	require.True(t, strings.Contains(ans.Message, "no human"))
}

// A checkpoint on the start page pauses the run before the model's first
// look; once rejected, a success claim on its page is not acknowledged.
func TestCheckpointOnStartPage(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	m := llm.NewScripted("controller", completeTurn("success", "paid"), completeTurn("failed", "not allowed"))
	sink := &humanSink{answer: answers(ApprovalAnswer{Message: "no"})}
	p := shopParams(s, m, Checkpoint{Name: "payment", URL: regexp.MustCompile(`/pay$`)})
	p.StartURL = s.URL + "/pay"
	res := runWith(t, p, sink)
	require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
	require.Len(t, sink.asked(), 1)
	require.Contains(t, requestText(m.Requests()[0]), `Checkpoint "payment": human_rejected`)
	results := toolResults(t, m.Requests()[1])
	require.Len(t, results, 1)
	require.Equal(t, false, results[0].body["acknowledged"])
	require.Contains(t, results[0].body["message"], "a human rejected continuing at a checkpoint")
}
