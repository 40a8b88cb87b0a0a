package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	// Model is what the controller model spent on a model-driven run of
	// this path: the recording run's controller calls, or, for a trace a
	// replay healed, those of the trace it healed. A replay saves it.
	Model Usage `json:"model"`
}

// Usage counts controller model calls and their tokens.
type Usage struct {
	Calls        int     `json:"calls"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Tokens is the input plus output tokens.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

// stored is the stored form of a trace's final part: Final with the
// trace's header (the actions are stored apart).
type stored struct {
	Final
	Format   int    `json:"format"`
	Goal     string `json:"goal"`
	StartURL string `json:"start_url"`
	Model    Usage  `json:"model"`
}

// Encode returns the stored form of t: its actions and its final part
// (the final page and verdict with the trace's header), as JSON.
func (t *Trace) Encode() (actions, final []byte, err error) {
	acts := t.Actions
	if acts == nil {
		acts = []Action{}
	}
	if actions, err = json.Marshal(acts); err != nil {
		return nil, nil, fmt.Errorf("encode trace actions: %w", err)
	}
	if final, err = json.Marshal(stored{t.Final, t.Format, t.Goal, t.StartURL, t.Model}); err != nil {
		return nil, nil, fmt.Errorf("encode trace final state: %w", err)
	}
	return actions, final, nil
}

// Decode reads a trace from its stored form (Encode). A trace of a newer
// format than this build reads is an error.
func Decode(actions, final []byte) (*Trace, error) {
	var st stored
	if err := json.Unmarshal(final, &st); err != nil {
		return nil, fmt.Errorf("decode trace final state: %w", err)
	}
	if st.Format > FormatVersion {
		return nil, fmt.Errorf("trace format %d is newer than this server reads (%d)", st.Format, FormatVersion)
	}
	t := &Trace{Format: st.Format, Goal: st.Goal, StartURL: st.StartURL, Final: st.Final, Model: st.Model}
	if err := json.Unmarshal(actions, &t.Actions); err != nil {
		return nil, fmt.Errorf("decode trace actions: %w", err)
	}
	return t, nil
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
