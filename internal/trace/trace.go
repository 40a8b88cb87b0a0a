package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// FormatVersion is the version of the stored trace format (Trace.Format).
const FormatVersion = 1

// Trace is the replayable record of one completed run: the actions that
// led to the goal, each with the page it expected and a fingerprint of its
// target, and what the judge saw when it confirmed the goal. It is stored
// as JSON, so its field names are part of the stored format. It never
// holds a secret's value: arguments keep the placeholders ({{name}}) the
// model wrote, and every text is redacted before it leaves the runner.
type Trace struct {
	// Format is FormatVersion when the trace was written.
	Format   int    `json:"format"`
	Goal     string `json:"goal"`
	StartURL string `json:"start_url"`
	// Actions are the run's successful actions in order.
	Actions []Action `json:"actions"`
	// Final is the page and the verdict at the end of the run.
	Final Final `json:"final"`
}

// Action is one recorded action.
type Action struct {
	// Step is the run step that took it.
	Step int `json:"step"`
	// Tool and Arguments are the tool call as the model made it, redacted:
	// a form-login secret stays its placeholder.
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments,omitempty"`
	// Target is the fingerprint of the element the action was aimed at,
	// nil for actions without an element (navigate, scroll the page,
	// wait for text) or when it could not be captured (TargetError).
	Target *Fingerprint `json:"target,omitempty"`
	// TargetError says why an action aimed at an element has no Target.
	TargetError string `json:"target_error,omitempty"`
	// Page and URL are the page the action was taken on.
	Page Signature `json:"page"`
	URL  string    `json:"url"`
	// URLAfter is the page's URL after the action, "" when unknown.
	URLAfter string `json:"url_after,omitempty"`
}

// Final is what confirmed the goal: the last page and the verdict.
type Final struct {
	URL  string    `json:"url"`
	Page Signature `json:"page"`
	// Reason is the run's account of the outcome (the model's claim or
	// the judge's reason).
	Reason string `json:"reason,omitempty"`
	// Verdict is the judge's final verdict, nil when the criteria alone
	// decided.
	Verdict *Verdict `json:"verdict,omitempty"`
	// Criteria are the completion indicators' last results.
	Criteria []Criterion `json:"criteria,omitempty"`
}

// Verdict is the judge's verdict as a trace keeps it.
type Verdict struct {
	Done       bool    `json:"done"`
	Confidence float64 `json:"confidence"`
	Reason     string  `json:"reason,omitempty"`
	Source     string  `json:"source,omitempty"`
}

// Criterion is one completion indicator's result at the end of the run.
type Criterion struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Value   string `json:"value"`
	Set     string `json:"set"`
	Matched bool   `json:"matched"`
	Err     string `json:"error,omitempty"`
}

// Key identifies the task a trace replays: a hash of the goal (whitespace
// collapsed), the start URL and the parameters that change behaviour,
// given as a JSON-compatible value with deterministic encoding (maps are
// encoded with sorted keys). Runs of the same task have the same key.
func Key(goal, startURL string, params any) (string, error) {
	b, err := json.Marshal(struct {
		Goal     string `json:"goal"`
		StartURL string `json:"start_url"`
		Params   any    `json:"params,omitempty"`
	}{strings.Join(strings.Fields(goal), " "), startURL, params})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
