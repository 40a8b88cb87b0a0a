package runner

import (
	"cmp"
	"context"
	"fmt"
	"strings"
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

// setPage makes p the run's page and tells the takeover.
func (ru *run) setPage(p *browser.Page) {
	ru.page = p
	if ru.p.Takeover != nil && p != nil {
		ru.p.Takeover.PageChanged(p)
	}
}

// humanTurn is the pause between steps: when a person asked for the
// browser they have it until they hand it back; what they did is recorded
// as a step by actor "human" and told to the model with the page as they
// left it. done is true when the run ended meanwhile.
func (ru *run) humanTurn() (res Result, done bool, err error) {
	if ru.p.Takeover == nil {
		return Result{}, false, nil
	}
	turn, ok, perr := ru.p.Takeover.Pause(ru.ctx)
	if !ok {
		if perr != nil && ru.ctx.Err() != nil {
			return Result{Status: StatusInterrupted}, true, nil
		}
		// Any other failure to pause leaves the browser with the model.
		return Result{}, false, nil
	}
	ru.step++
	ru.humanSteps++
	ru.rec = &Step{Number: ru.step, Start: turn.Start, Actor: "human", TakeoverID: turn.TakeoverID,
		Actions: turn.Actions, Reasoning: turn.Note}
	if err := ru.sink.StepStarted(ru.record, ru.step); err != nil {
		return Result{}, false, fmt.Errorf("record step start: %w", err)
	}
	if ru.ctx.Err() != nil {
		return Result{Status: StatusInterrupted}, true, nil
	}
	// The page as the person left it: its snapshot replaces the model's
	// refs, its screenshot is the step's.
	if !ru.takeObservation(nil) {
		if r, done := ru.interruptedOrCrash(); done {
			return r, true, nil
		}
	}
	if err := ru.finishStep(); err != nil {
		return Result{}, false, err
	}
	ru.pending = append(ru.pending, ru.humanNote(turn))
	if n := len(ru.conv.turns); n > 0 {
		ru.attachObservation(&ru.conv.turns[n-1])
	}
	return Result{}, false, nil
}

// humanNote tells the model what a person did with the browser.
func (ru *run) humanNote(turn HumanTurn) string {
	var b strings.Builder
	who := turn.By
	if who == "" {
		who = "a person"
	}
	fmt.Fprintf(&b, "A person (%s) took over the browser before this step", who)
	switch turn.EndReason {
	case "idle":
		b.WriteString(" and left it idle until their takeover expired")
	default:
		b.WriteString(" and handed it back")
	}
	if len(turn.Actions) == 0 {
		b.WriteString("; they did nothing.")
	} else {
		b.WriteString(". What they did:")
		for _, a := range turn.Actions {
			b.WriteString("\n- ")
			b.WriteString(ru.redact.String(describeHuman(a)))
		}
	}
	if note := strings.TrimSpace(turn.Note); note != "" {
		b.WriteString("\nTheir note to you: " + ru.redact.String(note))
	}
	if ru.obs != nil {
		b.WriteString("\nThe browser now shows " + ru.obs.url + ". Current page:\n" + untrusted(ru.obs.text))
	}
	b.WriteString("\nContinue towards the goal from this page.")
	return b.String()
}

// describeHuman says what a person's gesture was, in words.
func describeHuman(a Action) string {
	if a.Message != "" {
		return a.Message
	}
	arg := func(k string) string {
		if v, ok := a.Arguments[k]; ok {
			return fmt.Sprint(v)
		}
		return ""
	}
	target := arg("target")
	if target == "" {
		target = "the page"
	}
	switch a.Tool {
	case "human_click":
		return "clicked " + target
	case "human_type":
		return fmt.Sprintf("typed %s characters into %s", cmp.Or(arg("characters"), "some"), target)
	case "human_key":
		return "pressed " + arg("key")
	case "human_scroll":
		return fmt.Sprintf("scrolled by (%s, %s) px", cmp.Or(arg("dx"), "0"), cmp.Or(arg("dy"), "0"))
	case "human_navigate":
		return "went to " + arg("url")
	}
	return a.Tool + " " + fmt.Sprint(a.Arguments)
}
