package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/llm"
)

// scriptedTakeover is a person who takes the browser at the pauses the
// script names (by pause count, from 1) and acts on the run's page.
type scriptedTakeover struct {
	mu     sync.Mutex
	pages  []*browser.Page
	pauses int
	script map[int]func(ctx context.Context, page *browser.Page) HumanTurn
}

func (s *scriptedTakeover) PageChanged(p *browser.Page) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages = append(s.pages, p)
}

func (s *scriptedTakeover) Pause(ctx context.Context) (HumanTurn, bool, error) {
	s.mu.Lock()
	s.pauses++
	act, page := s.script[s.pauses], s.pages[len(s.pages)-1]
	s.mu.Unlock()
	if act == nil {
		return HumanTurn{}, false, nil
	}
	return act(ctx, page), true, nil
}

func (s *scriptedTakeover) count() (pauses, pages int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pauses, len(s.pages)
}

// A person takes over after the first step and opens the payment page;
// the model is told, sees the page as they left it (its refs), and goes
// on from there. The person's step does not count against MaxSteps.
func TestTakeoverBetweenSteps(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	person := &scriptedTakeover{script: map[int]func(context.Context, *browser.Page) HumanTurn{
		1: func(ctx context.Context, page *browser.Page) HumanTurn {
			start := time.Now()
			require.NoError(t, page.Navigate(ctx, s.URL+"/pay", 20*time.Second))
			return HumanTurn{TakeoverID: "to-1", By: "key:k1", Start: start, End: time.Now(), EndReason: "handed_back",
				Note: "I opened the payment page for you",
				Actions: []Action{
					{Tool: "human_click", Arguments: map[string]any{"target": `link "Checkout"`}, Outcome: "ok"},
					{Tool: "human_type", Arguments: map[string]any{"target": `textbox "Coupon"`, "characters": 6}, Outcome: "ok"},
				}}
		},
	}}
	m := llm.NewScripted("controller", scrollTurn(), clickTurn(t, "button", "Pay now"), completeTurn("failed", "stop"))
	p := shopParams(s, m)
	p.Takeover = person
	p.MaxSteps = 3
	res, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusFailed, res.Status, "%+v", res.Err)
	require.Equal(t, 4, res.Steps, "three model steps and the person's")
	require.Equal(t, 1, s.hit("POST /paid"), "the model clicked Pay now on the page the person opened")

	human := sink.step(t, 2)
	require.Equal(t, "human", human.Actor)
	require.Equal(t, "to-1", human.TakeoverID)
	require.Equal(t, s.URL+"/pay", human.URL)
	require.NotEmpty(t, human.Screenshot, "the step shows the page as the person left it")
	require.Len(t, human.Actions, 2)
	require.Equal(t, "model", sink.step(t, 3).Actor)

	reqs := m.Requests()
	text := requestText(reqs[1])
	for _, want := range []string{"A person (key:k1) took over the browser", `clicked link "Checkout"`,
		`typed 6 characters into textbox "Coupon"`, "Their note to you: I opened the payment page for you",
		"The browser now shows " + s.URL + "/pay"} {
		require.Contains(t, text, want)
	}
	require.NotContains(t, requestText(reqs[2]), "took over the browser", "told once")
	pauses, pages := person.count()
	require.Equal(t, 2, pauses, "a pause after each model step but the last")
	require.Equal(t, 1, pages, "the start page was announced")
}

// A run cancelled while a person has the browser ends interrupted and
// records nothing further.
func TestTakeoverInterrupted(t *testing.T) {
	t.Parallel()
	s := newSite(t, shopPages)
	ctx, cancel := context.WithCancel(runCtx(t))
	person := &scriptedTakeover{script: map[int]func(context.Context, *browser.Page) HumanTurn{
		1: func(ctx context.Context, _ *browser.Page) HumanTurn {
			cancel()
			<-ctx.Done()
			return HumanTurn{TakeoverID: "to-1", EndReason: "run_ended", Start: time.Now(), End: time.Now()}
		},
	}}
	m := llm.NewScripted("controller", scrollTurn(), completeTurn("failed", "stop"))
	p := shopParams(s, m)
	p.Takeover = person
	res, sink := execute(t, ctx, nil, p)
	require.Equal(t, StatusInterrupted, res.Status)
	require.Equal(t, 2, res.Steps)
	require.Equal(t, "human", sink.step(t, 2).Actor, "what the person did is kept")
	require.Len(t, m.Requests(), 1)
}

func TestDescribeHuman(t *testing.T) {
	tests := []struct {
		a    Action
		want string
	}{
		{Action{Tool: "human_click", Arguments: map[string]any{"target": `button "Save"`}}, `clicked button "Save"`},
		{Action{Tool: "human_type", Arguments: map[string]any{"target": `textbox "Email"`, "characters": 12}}, `typed 12 characters into textbox "Email"`},
		{Action{Tool: "human_key", Arguments: map[string]any{"key": "Enter"}}, "pressed Enter"},
		{Action{Tool: "human_scroll", Arguments: map[string]any{"dy": 300}}, "scrolled by (0, 300) px"},
		{Action{Tool: "human_navigate", Arguments: map[string]any{"url": "http://x/"}}, "went to http://x/"},
		{Action{Tool: "human_click", Message: "clicked the logo"}, "clicked the logo"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, describeHuman(tc.a))
	}
	require.True(t, strings.HasPrefix(describeHuman(Action{Tool: "other"}), "other"))
}
