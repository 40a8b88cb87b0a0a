package governance

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// leaseBrowser is a runner.Browser over one lease (no crash recovery).
type leaseBrowser struct{ l *pool.Lease }

func (b leaseBrowser) Session() *browser.Session { return b.l.Session() }
func (b leaseBrowser) Done() <-chan struct{}     { return b.l.Done() }
func (b leaseBrowser) Renew(context.Context) (*browser.Session, error) {
	return nil, b.l.Err()
}

// approvingSink records nothing and answers request_human_approval (and,
// through the run's governance, consent questions) with answer.
type approvingSink struct {
	answer bool
	asked  []string
}

func (*approvingSink) StepStarted(context.Context, int) error          { return nil }
func (*approvingSink) StepFinished(context.Context, runner.Step) error { return nil }
func (*approvingSink) PromptRun(context.Context, runner.PromptRun) error {
	return nil
}
func (*approvingSink) Event(context.Context, runner.Event) error { return nil }
func (s *approvingSink) Approve(_ context.Context, _ int, action, _ string) (bool, string, error) {
	s.asked = append(s.asked, action)
	return s.answer, "", nil
}

var _ runner.Approver = (*approvingSink)(nil)

// TestHooksInTheAgentLoop runs the real agent loop with a scripted model:
// the consent policy handles the start page's banner before the model's
// first look (which says so), and robots.txt refuses a navigation the
// model asks for.
func TestHooksInTheAgentLoop(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{
		"/":           oneTrustPage,
		"/robots.txt": "User-agent: *\nDisallow: /private\n",
	})
	for _, tc := range []struct {
		policy  wfv1.ConsentPolicy
		answer  bool
		want    string
		note    string
		askedTo int
	}{
		{wfv1.ConsentPolicy_CONSENT_POLICY_AUTO, false, "accepted", "cookie banner accepted by policy", 0},
		{wfv1.ConsentPolicy_CONSENT_POLICY_ASK, true, "accepted", "cookie banner accepted by policy (a human approved)", 1},
		{wfv1.ConsentPolicy_CONSENT_POLICY_ASK, false, "rejected", "cookie banner rejected by policy (a human was asked and declined)", 1},
	} {
		t.Run(tc.policy.String()+"/"+tc.want, func(t *testing.T) {
			t.Parallel()
			sink := &approvingSink{answer: tc.answer}
			var rep reports
			hooks := New(Config{}).Run(RunConfig{
				Settings: &wfv1.GovernanceConfig{Consent: tc.policy, RespectRobotsTxt: true},
				Policy:   allowPrivate(t), Client: http.DefaultClient, Report: rep.add,
				// The worker's wiring once its sink answers approvals.
				Approve: func(ctx context.Context, action, reason string) (bool, error) {
					ok, _, err := sink.Approve(ctx, 0, action, reason)
					return ok, err
				},
			})
			lease, err := sharedPool(t).Lease(context.Background(), browser.SessionOptions{})
			require.NoError(t, err)
			t.Cleanup(lease.Release)
			model := llm.NewScripted("controller",
				llm.Reply("", llm.Call(runner.ToolNavigate, map[string]any{"url": base + "/private/x", "reasoning": "look", "confidence": 0.9})),
				llm.Reply("", llm.Call(runner.ToolComplete, map[string]any{"status": "failed", "reason": "refused"})),
			)
			res, err := (&runner.Runner{}).Run(context.Background(), leaseBrowser{lease}, runner.Params{
				Goal: "read the news", StartURL: base + "/", Controller: model, MaxSteps: 4,
				Policy: allowPrivate(t), Hooks: hooks, MinConfidence: -1,
			}, sink)
			require.NoError(t, err)
			require.Equal(t, runner.StatusFailed, res.Status)

			reqs := model.Requests()
			require.Len(t, reqs, 2)
			first := requestText(reqs[0])
			require.Contains(t, first, tc.note)
			require.NotContains(t, first, "Accept All Cookies", "the model's first look is after the banner went")
			second := requestText(reqs[1])
			require.Contains(t, second, "domain_blocked")
			require.Contains(t, second, "robots.txt disallows")
			require.Len(t, sink.asked, tc.askedTo)

			page := lease.Session().ActivePage()
			require.Equal(t, tc.want, cookie(t, page, "consent"))
			require.Contains(t, rep.kinds(), ReportRobotsDisallowed)
		})
	}
}

// requestText is everything a request shows the model, as text.
func requestText(req *llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			b.WriteString(p.Text)
			if p.ToolResult != nil {
				b.WriteString(p.ToolResult.Content)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
