package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// benchPage is a small form whose button changes the page on every click.
const benchPage = `<!doctype html><title>Counter</title>
<h1>Counter</h1>
<label>Note <input name="note"></label>
<button type="button" id="add">Add</button>
<p role="status" id="status">0 added</p>
<script>
let n = 0;
document.getElementById('add').addEventListener('click', () => {
  document.getElementById('status').textContent = ++n + ' added';
});
</script>`

// BenchmarkStep measures one step of the agent loop on a small local page
// with a real Chromium: the scripted controller answers at once (a click or
// a fill on an element of the snapshot in its request), then the engine
// acts, observes the page (snapshot text and marked screenshot) and asks
// the heuristic judge, recording to a sink that keeps nothing. Everything
// but the model's latency. The first step (which opens the page) is not
// timed: the timer runs from the start of step 2 to the record of step
// b.N+1.
func BenchmarkStep(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(benchPage))
	}))
	b.Cleanup(srv.Close)
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: b.TempDir(), HealthInterval: time.Hour})
	require.NoError(b, err)
	require.NoError(b, p.Start(context.Background()))
	b.Cleanup(p.Close)

	for _, c := range []struct {
		name string
		call func(req *llm.Request, i int) (llm.ToolCall, error)
	}{
		{"click", func(req *llm.Request, _ int) (llm.ToolCall, error) {
			return refCall(req, runner.ToolClick, "button", "Add", nil)
		}},
		{"fill", func(req *llm.Request, i int) (llm.ToolCall, error) {
			return refCall(req, runner.ToolFill, "textbox", "Note", map[string]any{"value": fmt.Sprint("note ", i)})
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			lease, err := p.Lease(context.Background(), browser.SessionOptions{})
			require.NoError(b, err)
			defer lease.Release()

			// Step 1 and the b.N timed steps each take an action; the
			// last step completes.
			turns := make([]llm.Turn, 0, b.N+2)
			for i := range b.N + 1 {
				turns = append(turns, func(req *llm.Request) (*llm.Response, error) {
					call, err := c.call(req, i)
					if err != nil {
						return nil, err
					}
					return llm.Reply("", call)(req)
				})
			}
			turns = append(turns, llm.Reply("", llm.Call(runner.ToolComplete, map[string]any{"status": "success", "reason": "done"})))
			sink := &timingSink{
				started: func(n int) {
					if n == 2 {
						b.ResetTimer()
					}
				},
				finished: func(n int) {
					if n == b.N+1 {
						b.StopTimer()
					}
				},
			}
			b.ReportAllocs()
			res, err := (&runner.Runner{}).Run(context.Background(), leaseBrowser{lease}, runner.Params{
				Goal:                   "Benchmark the loop.",
				StartURL:               srv.URL,
				Policy:                 loopback{},
				MaxSteps:               b.N + 2,
				ScreenshotHistoryDepth: 3,
				Controller:             llm.NewScripted("benchmark", turns...),
				JudgeStrategy:          runner.JudgeHeuristic,
				Judge:                  &judge.Heuristic{},
			}, sink)
			require.NoError(b, err)
			require.Equal(b, runner.StatusCompleted, res.Status, "%+v", res.Err)
			require.Equal(b, b.N+2, sink.steps)
			require.Zero(b, sink.failed, "every action succeeds")
		})
	}
}

// elementLine finds an element's ref in a snapshot's text.
var elementLine = regexp.MustCompile(`(?m)^(@e\d+) (\S+) ("(?:[^"\\]|\\.)*")`)

// refCall returns a call of tool on the first element with role and name
// in the newest page snapshot of req: the opening page, or the snapshot
// field of a tool result.
func refCall(req *llm.Request, tool, role, name string, args map[string]any) (llm.ToolCall, error) {
	var snap string
	for _, p := range req.Messages[len(req.Messages)-1].Parts {
		switch {
		case p.ToolResult != nil:
			var body struct {
				Snapshot string `json:"snapshot"`
			}
			if json.Unmarshal([]byte(p.ToolResult.Content), &body) == nil && body.Snapshot != "" {
				snap = body.Snapshot
			}
		case p.Text != "":
			snap = p.Text
		}
	}
	for _, m := range elementLine.FindAllStringSubmatch(snap, -1) {
		if m[2] == role && m[3] == fmt.Sprintf("%q", name) {
			if args == nil {
				args = map[string]any{}
			}
			args["ref"], args["confidence"] = m[1], 0.9
			return llm.Call(tool, args), nil
		}
	}
	return llm.ToolCall{}, fmt.Errorf("no %s %q in the newest snapshot", role, name)
}

// timingSink keeps nothing (the store's cost is not the loop's) but step
// counts, and tells the benchmark when steps start and end.
type timingSink struct {
	started, finished func(n int)
	steps, failed     int
}

func (s *timingSink) StepStarted(_ context.Context, n int) error {
	s.started(n)
	return nil
}

func (s *timingSink) StepFinished(_ context.Context, st runner.Step) error {
	s.steps++
	for _, a := range st.Actions {
		if a.Outcome != "ok" {
			s.failed++
		}
	}
	s.finished(st.Number)
	return nil
}

func (s *timingSink) PromptRun(context.Context, runner.PromptRun) error { return nil }

func (s *timingSink) Event(context.Context, runner.Event) error { return nil }

// leaseBrowser is a runner.Browser over one lease that cannot be renewed:
// a crash fails the benchmark.
type leaseBrowser struct{ lease *pool.Lease }

func (b leaseBrowser) Session() *browser.Session { return b.lease.Session() }

func (b leaseBrowser) Done() <-chan struct{} { return b.lease.Done() }

func (b leaseBrowser) Renew(context.Context) (*browser.Session, error) {
	return nil, fmt.Errorf("the benchmark's browser died: %w", b.lease.Err())
}

// loopback allows the benchmark's local page only.
type loopback struct{}

func (loopback) Check(_ context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	if u.Hostname() != "127.0.0.1" {
		return fmt.Errorf("%s is not the benchmark page", u.Hostname())
	}
	return nil
}
