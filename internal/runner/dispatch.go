package runner

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// toolArgs is the union of the engine tools' arguments.
type toolArgs struct {
	Ref        string            `json:"ref"`
	Target     *browser.Target   `json:"target"`
	Value      *string           `json:"value"`
	ClearFirst *bool             `json:"clear_first"`
	Double     bool              `json:"double"`
	Direction  string            `json:"direction"`
	Amount     int               `json:"amount"`
	URL        string            `json:"url"`
	Keys       string            `json:"keys"`
	Checked    *bool             `json:"checked"`
	Text       string            `json:"text"`
	Seconds    float64           `json:"seconds"`
	TimeoutMS  int               `json:"timeout_ms"`
	X          *float64          `json:"x"`
	Y          *float64          `json:"y"`
	Action     string            `json:"action"`
	Tab        string            `json:"tab"`
	Rows       string            `json:"rows"`
	Fields     map[string]string `json:"fields"`
	Limit      int               `json:"limit"`
	Reasoning  string            `json:"reasoning"`
	Confidence *float64          `json:"confidence"`
	// get_snapshot
	ViewportOnly bool   `json:"viewport_only"`
	Filter       string `json:"filter"`
	Offset       int    `json:"offset"`
	// complete_task and request_human_approval
	Status string `json:"status"`
	Reason string `json:"reason"`
	// complete_task: any JSON value, kept as sent.
	Data json.RawMessage `json:"data"`
}

func parseArgs(raw json.RawMessage) (toolArgs, map[string]any, error) {
	var a toolArgs
	var m map[string]any
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return a, nil, fmt.Errorf("arguments are not a JSON object: %w", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, m, fmt.Errorf("arguments do not match the tool: %w", err)
	}
	return a, m, nil
}

// browserAction translates an engine browser tool call into a browser
// action. ok is false for tools that are not browser actions.
func browserAction(tool string, a toolArgs, actionTimeout time.Duration) (act browser.Action, ok bool, err error) {
	act = browser.Action{Ref: a.Ref, Target: a.Target}
	if a.Target != nil && a.Ref != "" {
		act.Target = nil // a ref wins; the target is the fallback the model gave
	}
	switch tool {
	case ToolClick:
		act.Kind = browser.ActionClick
		if a.Double {
			act.Kind = browser.ActionDoubleClick
		}
	case ToolFill:
		if a.Value == nil {
			return act, true, fmt.Errorf("value is required")
		}
		act.Kind, act.Value = browser.ActionFill, *a.Value
		if a.ClearFirst != nil && !*a.ClearFirst {
			act.Kind = browser.ActionType
		}
	case ToolSelect:
		if a.Value == nil {
			return act, true, fmt.Errorf("value is required")
		}
		act.Kind, act.Value = browser.ActionSelect, *a.Value
	case ToolScroll:
		act.Kind, act.Direction, act.Amount = browser.ActionScroll, a.Direction, a.Amount
		if a.Ref == "" && a.Target == nil && a.Direction == "" {
			return act, true, fmt.Errorf("give ref or direction")
		}
		if a.Ref != "" {
			act.Direction, act.Amount = "", 0
		}
	case ToolNavigate:
		act = browser.Action{Kind: browser.ActionNavigate, URL: a.URL}
	case ToolBack:
		act = browser.Action{Kind: browser.ActionBack}
	case ToolPressKey:
		act.Kind, act.Keys = browser.ActionPress, a.Keys
	case ToolHover:
		act.Kind = browser.ActionHover
	case ToolCheck:
		act.Kind = browser.ActionCheck
		if a.Checked != nil && !*a.Checked {
			act.Kind = browser.ActionUncheck
		}
	case ToolType:
		act.Kind, act.Value = browser.ActionType, a.Text
	case ToolWait:
		act.Kind = browser.ActionWait
		act.Target = nil
		switch {
		case a.Text != "":
			act.Ref, act.Text = "", a.Text
		case a.Ref != "":
		case a.Seconds > 0:
			act.Duration = time.Duration(a.Seconds * float64(time.Second))
		default:
			return act, true, fmt.Errorf("give text, ref or seconds")
		}
		if a.TimeoutMS > 0 {
			act.Timeout = time.Duration(a.TimeoutMS) * time.Millisecond
		}
		if max := 30 * time.Second; act.Timeout > max || act.Duration > max {
			return act, true, fmt.Errorf("waits are limited to 30s")
		}
		if act.Duration > 0 && act.Duration >= actionTimeout {
			act.Timeout = act.Duration + time.Second
		}
	case ToolClickAt:
		if a.X == nil || a.Y == nil {
			return act, true, fmt.Errorf("x and y are required")
		}
		act = browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Point: &browser.Point{X: *a.X, Y: *a.Y}}}
	case ToolTabs:
		switch a.Action {
		case "switch":
			act = browser.Action{Kind: browser.ActionSwitchTab, Tab: a.Tab}
		case "close":
			act = browser.Action{Kind: browser.ActionCloseTab, Tab: a.Tab}
		case "list", "":
			return act, false, nil // answered from the session's tab list
		default:
			return act, true, fmt.Errorf("action must be list, switch or close")
		}
	case ToolExtract:
		act = browser.Action{Kind: browser.ActionExtract, Extract: &browser.ExtractSpec{Rows: a.Rows, Fields: a.Fields, Limit: a.Limit}}
	default:
		return act, false, nil
	}
	return act, true, nil
}

// isBrowserTool reports whether tool acts on the page (and so counts
// against ActionsPerTurn and is subject to the confidence check).
func isBrowserTool(tool string) bool {
	switch tool {
	case ToolClick, ToolFill, ToolSelect, ToolScroll, ToolNavigate, ToolBack, ToolPressKey,
		ToolHover, ToolCheck, ToolType, ToolWait, ToolClickAt, ToolTabs, ToolExtract:
		return true
	}
	return false
}

// elementError reports whether code means the element could not be acted
// on, which calls for a self-correction with another targeting strategy.
func elementError(code browser.ErrorCode) bool {
	switch code {
	case browser.CodeRefInvalid, browser.CodeElementDisabled, browser.CodeElementObscured,
		browser.CodeElementNotVisible, browser.CodeActionFailed:
		return true
	}
	return false
}
