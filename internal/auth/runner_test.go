package auth

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// oneContext is a runner.Browser that is never replaced.
type oneContext struct{ s *browser.Session }

func (b oneContext) Session() *browser.Session { return b.s }
func (b oneContext) Done() <-chan struct{}     { return nil }
func (b oneContext) Renew(context.Context) (*browser.Session, error) {
	return nil, errors.New("no replacement in this test")
}

type nopSink struct{}

func (nopSink) StepStarted(context.Context, int) error            { return nil }
func (nopSink) StepFinished(context.Context, runner.Step) error   { return nil }
func (nopSink) PromptRun(context.Context, runner.PromptRun) error { return nil }
func (nopSink) Event(context.Context, runner.Event) error         { return nil }

// runEngine runs the real agent loop with a as its hooks, on a context
// with a's network rules, and a controller that answers nothing.
func runEngine(t *testing.T, a *Auth, startURL string) (runner.Result, *llm.Scripted) {
	t.Helper()
	pol, err := guard.New(nil, nil, true)
	require.NoError(t, err)
	model := llm.NewScripted("silent", func(*llm.Request) (*llm.Response, error) {
		return nil, &llm.Error{Class: llm.ErrInvalidRequest, Provider: llm.ProviderScripted, Message: "the test ends here"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := (&runner.Runner{Retry: &llm.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 1, AttemptTimeout: time.Minute}}).Run(
		ctx, oneContext{newContext(t, a)},
		runner.Params{Goal: "open the dashboard", StartURL: startURL, Policy: pol, Controller: model, MaxSteps: 2,
			JudgeStrategy: runner.JudgeHeuristic, Hooks: a, Secrets: a.Secrets()},
		nopSink{})
	require.NoError(t, err)
	return res, model
}

func TestEngineRunsTheHooks(t *testing.T) {
	t.Parallel()
	t.Run("global login before the start URL", func(t *testing.T) {
		t.Parallel()
		s, logins := loginSite(t)
		a, err := New(Config{Global: &Callback{Script: loginScript(s, testPassword)}}, Options{})
		require.NoError(t, err)
		_, model := runEngine(t, a, s.at("app.test", "/dashboard"))
		require.EqualValues(t, 1, logins.Load())
		reqs := model.Requests()
		require.NotEmpty(t, reqs)
		raw, err := json.Marshal(reqs[0])
		require.NoError(t, err)
		require.Contains(t, string(raw), "dashboard alice", "the model's first page is not the signed-in dashboard")
		require.NotContains(t, string(raw), testPassword)
	})
	t.Run("second 401 of the start URL", func(t *testing.T) {
		t.Parallel()
		s := protectedSite(t, func(tok string) bool { return tok == "right" })
		a, err := New(Config{Bindings: []Binding{{Domains: []string{"api.test"}, Method: &Bearer{Token: "wrong-token-9"}}}}, Options{})
		require.NoError(t, err)
		res, model := runEngine(t, a, s.at("api.test", "/protected"))
		require.Equal(t, runner.StatusError, res.Status)
		require.NotNil(t, res.Err)
		require.Equal(t, runner.CategoryAuthentication, res.Err.Category)
		require.NotContains(t, res.Err.Message, "wrong-token-9")
		require.Empty(t, model.Requests(), "the model was asked about a page the run could not open")
	})
}
