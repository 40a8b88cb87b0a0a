package runner

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/llm"
)

func TestModelAnswers(t *testing.T) {
	t.Parallel()
	text := func(s string) llm.Turn { return llm.Reply(s) }
	for _, tc := range []struct {
		name     string
		turns    []llm.Turn
		status   Status
		category Category
		message  string // in the error
		requests int
		retries  int
		nudge    string // in the second request
	}{
		{"text twice, then a call", []llm.Turn{text("Let me think."), text("Still thinking."), completeTurn("failed", "stop")},
			StatusFailed, "", "", 3, 0, "Answer with exactly one tool call"},
		{"text three times", []llm.Turn{text("a"), text("b"), text("c"), completeTurn("failed", "never reached")},
			StatusError, CategoryLLMParseError, "without a tool call three times", 3, 0, "Answer with exactly one tool call"},
		{"unparseable answers", []llm.Turn{modelError(llm.ErrUnparseable, "bad JSON in the arguments"),
			modelError(llm.ErrUnparseable, "bad JSON"), modelError(llm.ErrUnparseable, "bad JSON again")},
			StatusError, CategoryLLMParseError, "bad JSON again", 3, 0, "Your last answer could not be parsed"},
		{"an authentication error is not retried", []llm.Turn{modelError(llm.ErrAuth, "invalid x-api-key"), completeTurn("failed", "never reached")},
			StatusError, CategoryLLMError, "invalid x-api-key", 1, 0, ""},
		{"a refusal", []llm.Turn{modelError(llm.ErrRefused, "safety stop")},
			StatusError, CategoryLLMError, "safety stop", 1, 0, ""},
		{"transient errors are retried", []llm.Turn{modelError(llm.ErrTransient, "overloaded"), modelError(llm.ErrRateLimited, "slow down"),
			completeTurn("failed", "stop")}, StatusFailed, "", "", 3, 2, ""},
		{"transient errors until the retries run out", []llm.Turn{modelError(llm.ErrTransient, "overloaded 1"),
			modelError(llm.ErrTransient, "overloaded 2"), modelError(llm.ErrTransient, "overloaded 3"), completeTurn("failed", "never reached")},
			StatusError, CategoryLLMError, "overloaded 3", 3, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, nil)
			m := llm.NewScripted("controller", tc.turns...)
			var mu sync.Mutex
			var retries []string
			r := &Runner{Retry: fastRetry, OnModelRetry: func(provider string, _ int, err error) {
				mu.Lock()
				defer mu.Unlock()
				retries = append(retries, provider+": "+err.Error())
			}}
			res, sink := execute(t, runCtx(t), r, params(s, m))
			require.Equal(t, tc.status, res.Status, "%+v", res.Err)
			require.Equal(t, 1, res.Steps)
			if tc.category != "" {
				require.Equal(t, tc.category, res.Err.Category)
				require.Contains(t, res.Err.Message, tc.message)
				st := sink.step(t, 1)
				require.Equal(t, tc.category, st.Err.Category, "the step records the error")
			}
			reqs := m.Requests()
			require.Len(t, reqs, tc.requests)
			if tc.nudge != "" {
				last := reqs[1].Messages[len(reqs[1].Messages)-1]
				require.Equal(t, llm.RoleUser, last.Role)
				require.Contains(t, messageText(last), tc.nudge)
				require.Equal(t, llm.RoleAssistant, reqs[1].Messages[len(reqs[1].Messages)-2].Role, "the answer is shown back")
			}
			mu.Lock()
			require.Len(t, retries, tc.retries)
			for _, r := range retries {
				require.True(t, strings.HasPrefix(r, llm.ProviderScripted+": "), r)
			}
			mu.Unlock()
			prs := sink.promptRuns()
			require.Len(t, prs, tc.requests, "every attempt is on record")
			failed := 0
			for _, pr := range prs {
				if pr.Err != "" {
					failed++
				}
			}
			if tc.status == StatusError && tc.category == CategoryLLMError {
				require.Equal(t, tc.requests, failed)
			}
		})
	}
}

func TestRepromptedExchangeStaysInHistory(t *testing.T) {
	t.Parallel()
	s := newSite(t, nil)
	m := llm.NewScripted("controller", llm.Reply("I will scroll."), scrollTurn(), completeTurn("failed", "stop"))
	res, _ := execute(t, runCtx(t), nil, params(s, m))
	require.Equal(t, StatusFailed, res.Status)
	reqs := m.Requests()
	require.Len(t, reqs, 3)
	msgs := reqs[2].Messages
	// opening, the text answer and its nudge, the scroll and its result.
	require.Len(t, msgs, 5)
	require.Equal(t, "I will scroll.", messageText(msgs[1])[:len("I will scroll.")])
	require.Contains(t, messageText(msgs[2]), "Answer with exactly one tool call")
	require.NotContains(t, messageText(msgs[4]), "Answer with exactly one tool call", "the nudge is not repeated")
}

func TestCancellation(t *testing.T) {
	t.Parallel()
	t.Run("during a model call", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, nil)
		ctx, cancel := context.WithCancel(runCtx(t))
		defer cancel()
		entered := make(chan struct{})
		m := llm.NewScripted("controller", scrollTurn(), func(*llm.Request) (*llm.Response, error) {
			close(entered)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		go func() {
			<-entered
			cancel()
		}()
		res, sink := execute(t, ctx, nil, params(s, m))
		require.Equal(t, StatusInterrupted, res.Status)
		require.Nil(t, res.Err, "the caller knows why it cancelled")
		require.Equal(t, 2, res.Steps)
		st := sink.step(t, 2)
		require.Nil(t, st.Err)
		require.Empty(t, st.Actions)
		require.Equal(t, s.URL+"/login", res.FinalURL)
	})
	t.Run("during a wait", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, nil)
		ctx, cancel := context.WithCancel(runCtx(t))
		defer cancel()
		m := llm.NewScripted("controller", llm.Reply("wait a while", llm.Call(ToolWait, map[string]any{"seconds": 20, "reasoning": "r", "confidence": 1})),
			completeTurn("failed", "never reached"))
		sink := &recordingSink{onEvent: func(e Event) {
			if e.Kind == EventToolCalled && e.Tool == ToolWait {
				go func() {
					time.Sleep(300 * time.Millisecond) // let the wait begin
					cancel()
				}()
			}
		}}
		res, _ := executeOn(t, ctx, nil, newLeasedBrowser(t, sharedPool(t)), params(s, m), sink)
		require.Equal(t, StatusInterrupted, res.Status)
		require.Equal(t, 1, res.Steps)
		wait := sink.step(t, 1).Actions[1]
		require.Equal(t, ToolWait, wait.Tool)
		require.Equal(t, "action_failed", wait.Outcome, "the wait was cut short: %s", wait.Message)
		require.Len(t, m.Requests(), 1)
	})
	t.Run("during a navigation", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(runCtx(t))
		defer cancel()
		release := make(chan struct{})
		defer close(release)
		var hits atomic.Int32
		s := newSite(t, map[string]string{"/start": `<!doctype html><title>Start</title><a href="/hang">Slow page</a>`})
		s.mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
			if hits.Add(1) == 1 {
				cancel()
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		m := llm.NewScripted("controller", clickTurn(t, "link", "Slow page"), completeTurn("failed", "never reached"))
		p := params(s, m)
		p.StartURL = s.URL + "/start"
		res, sink := execute(t, ctx, nil, p)
		require.Equal(t, StatusInterrupted, res.Status)
		click := sink.step(t, 1).Actions[1]
		require.Equal(t, "action_failed", click.Outcome, "the click was cut short: %s", click.Message)
		require.EqualValues(t, 1, hits.Load())
	})
}

func TestBrowserCrash(t *testing.T) {
	t.Parallel()
	t.Run("the run recovers in a new context at the last URL", func(t *testing.T) {
		t.Parallel()
		p, dir := ownPool(t)
		b := newLeasedBrowser(t, p)
		s := newSite(t, nil)
		crashThen := func(next llm.Turn) llm.Turn {
			return func(req *llm.Request) (*llm.Response, error) {
				b.crash(t, dir)
				return next(req)
			}
		}
		m := llm.NewScripted("controller",
			clickTurn(t, "link", "Help"),
			crashThen(clickTurn(t, "link", "Back to sign in")),
			clickTurn(t, "link", "Back to sign in"),
			completeTurn("success", "back on the sign-in page"))
		pr := params(s, m)
		pr.Goal = "Read the help and come back to the sign-in page"
		pr.JudgeFrequency = judge.Frequency{EveryN: 1000}
		first := b.Session()
		res, sink := executeOn(t, runCtx(t), nil, b, pr, &recordingSink{})

		require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
		require.Equal(t, 4, res.Steps)
		require.Equal(t, s.URL+"/login", res.FinalURL)
		require.Equal(t, 1, b.renewed())
		require.NotSame(t, first, b.Session(), "a new context")
		require.Equal(t, 2, s.hit("GET /help"), "the help page was reopened after the crash")

		crashed := sink.step(t, 2)
		require.NotNil(t, crashed.Err)
		require.Equal(t, CategoryBrowserCrash, crashed.Err.Category)
		require.Len(t, crashed.Actions, 2, "the click is recorded once, then the reopening")
		require.Equal(t, "action_failed", crashed.Actions[0].Outcome)
		require.Equal(t, ToolNavigate, crashed.Actions[1].Tool)
		require.Equal(t, "ok", crashed.Actions[1].Outcome)
		require.Equal(t, s.URL+"/help", crashed.Actions[1].Arguments["url"])
		require.Equal(t, s.URL+"/help", crashed.URL)

		reqs := m.Requests()
		results := toolResults(t, reqs[2])
		require.Len(t, results, 1)
		require.Equal(t, "action_failed", results[0].body["error"], "the click that met the crash is answered")
		require.Contains(t, results[0].body["message"], "browser crashed or disconnected")
		last := reqs[2].Messages[len(reqs[2].Messages)-1]
		require.Contains(t, messageText(last), "The browser crashed and was restarted (restart 1 of at most 2); it reopened "+s.URL+"/help.")
		require.Contains(t, latestSnapshot(t, reqs[2]), `page: "Help" `+s.URL+"/help", "the model sees the reopened page")
		require.Nil(t, sink.step(t, 3).Err)
	})
	t.Run("a run that crashes too often ends", func(t *testing.T) {
		t.Parallel()
		p, dir := ownPool(t)
		b := newLeasedBrowser(t, p)
		s := newSite(t, nil)
		crashing := func(req *llm.Request) (*llm.Response, error) {
			b.crash(t, dir)
			return scrollTurn()(req)
		}
		m := llm.NewScripted("controller", crashing, crashing, completeTurn("failed", "never reached"))
		pr := params(s, m)
		pr.MaxRenewals = 1
		res, sink := executeOn(t, runCtx(t), nil, b, pr, &recordingSink{})
		require.Equal(t, StatusError, res.Status)
		require.Equal(t, CategoryBrowserCrash, res.Err.Category)
		require.Contains(t, res.Err.Message, "(after 1 restarts)")
		require.Equal(t, 2, res.Steps)
		require.Equal(t, 1, b.renewed())
		require.Equal(t, CategoryBrowserCrash, sink.step(t, 1).Err.Category)
		require.Equal(t, CategoryBrowserCrash, sink.step(t, 2).Err.Category)
		require.Len(t, m.Requests(), 2)
	})
}

// unrenewable is a browser that cannot be replaced.
type unrenewable struct{ *leasedBrowser }

func (unrenewable) Renew(context.Context) (*browser.Session, error) {
	return nil, errors.New("no browser available")
}

func TestBrowserCrashOutsideActions(t *testing.T) {
	t.Parallel()
	t.Run("before the start URL opens", func(t *testing.T) {
		t.Parallel()
		p, dir := ownPool(t)
		b := newLeasedBrowser(t, p)
		b.crash(t, dir)
		s := newSite(t, nil)
		m := llm.NewScripted("controller", completeTurn("failed", "stop"))
		res, sink := executeOn(t, runCtx(t), nil, b, params(s, m), &recordingSink{})
		require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
		require.Equal(t, 1, b.renewed())
		opening := messageText(m.Requests()[0].Messages[0])
		require.Contains(t, opening, "The browser opened "+s.URL+"/login. Current page:")
		require.Contains(t, opening, "The browser crashed and was restarted (restart 1 of at most 2); it reopened "+s.URL+"/login.")
		st := sink.step(t, 1)
		require.Equal(t, CategoryBrowserCrash, st.Err.Category)
		require.Equal(t, "action_failed", st.Actions[0].Outcome, "the first navigation met the crash")
		require.Equal(t, s.URL+"/login", st.URL)
	})
	t.Run("during a model call that claims success", func(t *testing.T) {
		t.Parallel()
		p, dir := ownPool(t)
		b := newLeasedBrowser(t, p)
		s := newSite(t, nil)
		m := llm.NewScripted("controller", func(req *llm.Request) (*llm.Response, error) {
			b.crash(t, dir)
			return completeTurn("success", "surely done")(req)
		}, completeTurn("failed", "stop"))
		res, sink := executeOn(t, runCtx(t), nil, b, params(s, m), &recordingSink{})
		require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
		require.Equal(t, 1, b.renewed())
		results := toolResults(t, m.Requests()[1])
		require.Equal(t, false, results[0].body["acknowledged"], "a claim made as the browser crashed is not confirmed")
		require.Contains(t, requestText(m.Requests()[1]), "The browser crashed and was restarted")
		require.Equal(t, CategoryBrowserCrash, sink.step(t, 1).Err.Category)
	})
	t.Run("a browser that cannot be replaced", func(t *testing.T) {
		t.Parallel()
		p, dir := ownPool(t)
		b := newLeasedBrowser(t, p)
		s := newSite(t, nil)
		m := llm.NewScripted("controller", func(req *llm.Request) (*llm.Response, error) {
			b.crash(t, dir)
			return scrollTurn()(req)
		})
		res, sink := executeOn(t, runCtx(t), nil, unrenewable{b}, params(s, m), &recordingSink{})
		require.Equal(t, StatusError, res.Status)
		require.Equal(t, CategoryBrowserCrash, res.Err.Category)
		require.Contains(t, res.Err.Message, "restarting it failed: no browser available")
		require.Equal(t, CategoryBrowserCrash, sink.step(t, 1).Err.Category)
		require.Equal(t, s.URL+"/login", res.FinalURL, "the last page known")
	})
}
