package runner

import (
	"context"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// Takeover lets a person take the browser from the model between steps
// (the service's live view). The runner tells it which page the run is on
// and asks it, between steps, whether a person wants the browser.
type Takeover interface {
	// PageChanged is called whenever the run's page changes: the start
	// page, a tab switch, a browser restart. It must not block.
	PageChanged(page *browser.Page)
	// Pause is called between steps. When nobody asked for the browser it
	// returns ok=false at once. Otherwise the person has the page until
	// they hand it back, their takeover expires or ctx ends, and Pause
	// returns what they did. A takeover that began and ended while the run
	// was idle for another reason (an approval wait) is returned by the
	// next Pause without waiting.
	Pause(ctx context.Context) (turn HumanTurn, ok bool, err error)
}

// HumanTurn is what a person did while they had the browser. The runner
// records it as a step by actor "human" (not counted against MaxSteps)
// and tells the model.
type HumanTurn struct {
	// TakeoverID identifies the takeover; the recorded step carries it.
	TakeoverID string
	// By names the person (an API key's name, or "local").
	By         string
	Start, End time.Time
	// Actions are the person's gestures, described for the model and the
	// record (Tool "human_click", "human_type", "human_key",
	// "human_scroll", "human_navigate"). Typed text is never included:
	// "human_type" says how many characters went into which element.
	Actions []Action
	// Note is the person's message to the model, "" for none.
	Note string
	// EndReason is why the turn ended: "handed_back", "idle" (no input
	// for the idle limit) or "run_ended".
	EndReason string
}
