package runner

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/llm"
)

// Redacted replaces a value of Params.Redact wherever it appears.
const Redacted = "[redacted]"

// MinRedactLength is the length, in characters, below which a value is not
// redacted from text: replacing every "ab" of a page would garble what the
// model reads and records while protecting nothing a guess would not find.
// A shorter Secret is still substituted only on its domains and never
// recorded by the runner itself; it is only not searched for in page text.
const MinRedactLength = 4

// Redactor replaces secret values in text: a Secret's value by its
// placeholder {{name}}, other values by [redacted]. Each value is also
// found in the forms a page or a record may carry it in: URL-encoded
// (query and path), base64 (standard and URL alphabets, padded or not),
// HTML-escaped and JSON-escaped. Longer values are replaced first, so a
// value containing another is replaced whole. Placeholders and [redacted]
// are left as they are, so redacting twice changes nothing. A nil or empty
// Redactor returns its input.
type Redactor struct {
	mu      sync.Mutex // serialises Add
	secrets []Secret
	values  []string
	rep     atomic.Pointer[strings.Replacer]
}

// NewRedactor returns the Redactor of secrets and of the further values;
// empty values and values shorter than MinRedactLength are skipped.
func NewRedactor(secrets []Secret, values []string) *Redactor {
	r := &Redactor{secrets: slices.Clone(secrets), values: slices.Clone(values)}
	r.rep.Store(replacer(r.secrets, r.values))
	return r
}

// Add adds values to redact (as Redacted) from now on: secrets learnt
// while the run goes, such as an OAuth token acquired on the way. Safe for
// concurrent use with everything else.
func (r *Redactor) Add(values ...string) {
	if r == nil || len(values) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	added := false
	for _, v := range values {
		if v != "" && !slices.Contains(r.values, v) {
			r.values = append(r.values, v)
			added = true
		}
	}
	if added {
		r.rep.Store(replacer(r.secrets, r.values))
	}
}

// replacer builds the replacer of secrets and values; nil when there is
// nothing to redact.
func replacer(secrets []Secret, values []string) *strings.Replacer {
	type pair struct{ old, new string }
	var pairs []pair
	seen := map[string]bool{}
	add := func(old, new string) {
		if old == "" || seen[old] {
			return
		}
		seen[old] = true
		pairs = append(pairs, pair{old, new})
	}
	forms := func(v, repl string) {
		if utf8.RuneCountInString(v) < MinRedactLength {
			return
		}
		for _, f := range encodings(v) {
			add(f, repl)
		}
	}
	for _, s := range secrets {
		forms(s.Value, Placeholder(s.Name))
	}
	for _, v := range values {
		forms(v, Redacted)
	}
	if len(pairs) == 0 {
		return nil
	}
	for _, s := range secrets {
		add(Placeholder(s.Name), Placeholder(s.Name))
	}
	add(Redacted, Redacted)
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(len(b.old), len(a.old)) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.old, p.new)
	}
	return strings.NewReplacer(args...)
}

func encodings(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v), html.EscapeString(v),
		base64.StdEncoding.EncodeToString([]byte(v)), base64.URLEncoding.EncodeToString([]byte(v)),
		base64.RawStdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))}
	// Inside a JSON string (a stored request, a tool result), with and
	// without HTML escaping.
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		s := strings.TrimSuffix(sb.String(), "\n")
		out = append(out, s[1:len(s)-1])
	}
	return out
}

// Active reports whether r redacts anything.
func (r *Redactor) Active() bool { return r != nil && r.rep.Load() != nil }

// String returns s with every secret value replaced.
func (r *Redactor) String(s string) string {
	if !r.Active() || s == "" {
		return s
	}
	return r.rep.Load().Replace(s)
}

// Bytes returns b with every secret value replaced (b itself when there is
// nothing to replace).
func (r *Redactor) Bytes(b []byte) []byte {
	if !r.Active() || len(b) == 0 {
		return b
	}
	s := string(b)
	if out := r.rep.Load().Replace(s); out != s {
		return []byte(out)
	}
	return b
}

// Strings redacts each of ss in place and returns it.
func (r *Redactor) Strings(ss []string) []string {
	if !r.Active() {
		return ss
	}
	for i := range ss {
		ss[i] = r.String(ss[i])
	}
	return ss
}

// Value returns a copy of v (a JSON-like value: maps, slices, strings,
// numbers, booleans) with every string, and every map key, redacted.
func (r *Redactor) Value(v any) any {
	if !r.Active() {
		return v
	}
	switch x := v.(type) {
	case string:
		return r.String(x)
	case map[string]any:
		return r.Map(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.Value(e)
		}
		return out
	case []string:
		return r.Strings(slices.Clone(x))
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			out[r.String(k)] = r.String(e)
		}
		return out
	}
	return v
}

// Map returns a redacted copy of m (nil for nil).
func (r *Redactor) Map(m map[string]any) map[string]any {
	if !r.Active() || m == nil {
		return m
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[r.String(k)] = r.Value(e)
	}
	return out
}

// Request returns a copy of req with every text redacted: the system
// prompt, tool descriptions, message texts, tool call arguments, tool
// results and the structured observation. Images are shared.
func (r *Redactor) Request(req *llm.Request) *llm.Request {
	if !r.Active() || req == nil {
		return req
	}
	out := *req
	out.System = r.String(req.System)
	if req.Tools != nil {
		out.Tools = make([]llm.Tool, len(req.Tools))
		for i, t := range req.Tools {
			t.Description = r.String(t.Description)
			out.Tools[i] = t
		}
	}
	out.Messages = r.Messages(req.Messages)
	if o := req.Observation; o != nil {
		c := *o
		c.Goal, c.URL, c.Title, c.Text = r.String(o.Goal), r.String(o.URL), r.String(o.Title), r.String(o.Text)
		c.Elements = make([]llm.ObservedElement, len(o.Elements))
		for i, e := range o.Elements {
			e.Name, e.Value, e.Context, e.Hint = r.String(e.Name), r.String(e.Value), r.String(e.Context), r.String(e.Hint)
			e.Options = r.Strings(slices.Clone(e.Options))
			c.Elements[i] = e
		}
		out.Observation = &c
	}
	return &out
}

// Messages returns redacted copies of msgs.
func (r *Redactor) Messages(msgs []llm.Message) []llm.Message {
	if !r.Active() || msgs == nil {
		return msgs
	}
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		parts := make([]llm.Part, len(m.Parts))
		for j, p := range m.Parts {
			p.Text = r.String(p.Text)
			if p.ToolCall != nil {
				tc := r.toolCall(*p.ToolCall)
				p.ToolCall = &tc
			}
			if p.ToolResult != nil {
				tr := *p.ToolResult
				tr.Content = r.String(tr.Content)
				p.ToolResult = &tr
			}
			parts[j] = p
		}
		out[i] = llm.Message{Role: m.Role, Parts: parts}
	}
	return out
}

func (r *Redactor) toolCall(tc llm.ToolCall) llm.ToolCall {
	tc.Arguments = json.RawMessage(r.Bytes(tc.Arguments))
	return tc
}

// Response returns a redacted copy of resp.
func (r *Redactor) Response(resp *llm.Response) *llm.Response {
	if !r.Active() || resp == nil {
		return resp
	}
	out := *resp
	out.Text = r.String(resp.Text)
	if resp.ToolCalls != nil {
		out.ToolCalls = make([]llm.ToolCall, len(resp.ToolCalls))
		for i, tc := range resp.ToolCalls {
			out.ToolCalls[i] = r.toolCall(tc)
		}
	}
	return &out
}

// Step returns a redacted copy of st (the screenshot is shared: images
// cannot be redacted).
func (r *Redactor) Step(st Step) Step {
	if !r.Active() {
		return st
	}
	st.URL, st.Title, st.Reasoning = r.String(st.URL), r.String(st.Title), r.String(st.Reasoning)
	st.Err = r.Error(st.Err)
	st.Verdict = r.Verdict(st.Verdict)
	if st.Actions != nil {
		acts := make([]Action, len(st.Actions))
		for i, a := range st.Actions {
			a.Arguments, a.Result = r.Map(a.Arguments), r.Map(a.Result)
			a.Message = r.String(a.Message)
			acts[i] = a
		}
		st.Actions = acts
	}
	return st
}

// Error returns a redacted copy of e (nil for nil).
func (r *Redactor) Error(e *Error) *Error {
	if !r.Active() || e == nil {
		return e
	}
	c := *e
	c.Message = r.String(e.Message)
	return &c
}

// Verdict returns a redacted copy of v (nil for nil).
func (r *Redactor) Verdict(v *judge.Verdict) *judge.Verdict {
	if !r.Active() || v == nil {
		return v
	}
	c := *v
	c.Reason, c.Feedback, c.SuggestedNextAction = r.String(v.Reason), r.String(v.Feedback), r.String(v.SuggestedNextAction)
	return &c
}

// Event returns a redacted copy of e.
func (r *Redactor) Event(e Event) Event {
	if !r.Active() {
		return e
	}
	e.Tool, e.Outcome, e.Message = r.String(e.Tool), r.String(e.Outcome), r.String(e.Message)
	e.Verdict = r.Verdict(e.Verdict)
	return e
}

// PromptRun returns a redacted copy of pr.
func (r *Redactor) PromptRun(pr PromptRun) PromptRun {
	if !r.Active() {
		return pr
	}
	pr.Request, pr.Response, pr.Err = r.Request(pr.Request), r.Response(pr.Response), r.String(pr.Err)
	return pr
}

// Result returns a redacted copy of res.
func (r *Redactor) Result(res Result) Result {
	if !r.Active() {
		return res
	}
	res.Err, res.Verdict = r.Error(res.Err), r.Verdict(res.Verdict)
	res.FinalURL, res.Reason = r.String(res.FinalURL), r.String(res.Reason)
	res.Output = r.Value(res.Output)
	return res
}

// Snapshot redacts every text of snap in place: page, tabs, dialogs,
// elements, visible text and HTML.
func (r *Redactor) Snapshot(snap *browser.Snapshot) {
	if !r.Active() || snap == nil {
		return
	}
	snap.Page.URL, snap.Page.Title = r.String(snap.Page.URL), r.String(snap.Page.Title)
	snap.Filter = r.String(snap.Filter)
	snap.VisibleText, snap.HTML, snap.Degraded = r.String(snap.VisibleText), r.String(snap.HTML), r.String(snap.Degraded)
	for i := range snap.Tabs {
		snap.Tabs[i].Title, snap.Tabs[i].URL = r.String(snap.Tabs[i].Title), r.String(snap.Tabs[i].URL)
	}
	r.dialogs(snap.Dialogs)
	for i := range snap.Elements {
		e := &snap.Elements[i]
		e.Name, e.Value, e.Context = r.String(e.Name), r.String(e.Value), r.String(e.Context)
		e.Hint, e.URL = r.String(e.Hint), r.String(e.URL)
		r.Strings(e.Options)
	}
}

func (r *Redactor) dialogs(ds []browser.DialogEvent) {
	for i := range ds {
		ds[i].Message, ds[i].URL = r.String(ds[i].Message), r.String(ds[i].URL)
		ds[i].DefaultPrompt, ds[i].PromptText, ds[i].Error = r.String(ds[i].DefaultPrompt), r.String(ds[i].PromptText), r.String(ds[i].Error)
	}
}

// ActionResult redacts what an action reported, in place: the field's
// value (a fill echoes what it typed), notes, messages, URLs, extracted
// rows, dialogs, tabs and the snapshot after the action.
func (r *Redactor) ActionResult(res *browser.ActionResult) {
	if !r.Active() || res == nil {
		return
	}
	res.Value, res.Note, res.Element, res.URL = r.String(res.Value), r.String(res.Note), r.String(res.Element), r.String(res.URL)
	res.SnapshotError = r.String(res.SnapshotError)
	if res.Error != nil {
		e := *res.Error
		e.Message, e.Covering = r.String(e.Message), r.String(e.Covering)
		res.Error = &e
	}
	for i := range res.Attempts {
		res.Attempts[i].Error = r.String(res.Attempts[i].Error)
	}
	for i, row := range res.Rows {
		res.Rows[i] = r.Value(row).(map[string]string)
	}
	for i := range res.Tabs {
		res.Tabs[i].Title, res.Tabs[i].URL = r.String(res.Tabs[i].Title), r.String(res.Tabs[i].URL)
	}
	for i := range res.Cookies {
		res.Cookies[i].Value = r.String(res.Cookies[i].Value)
	}
	r.dialogs(res.Dialogs)
	r.Snapshot(res.Snapshot)
}

// JudgeContext redacts the texts of c in place (the goal, the page, the
// step summaries and the claim); screenshots are left as they are.
func (r *Redactor) JudgeContext(c *judge.Context) {
	if !r.Active() || c == nil {
		return
	}
	c.Goal, c.Page = r.String(c.Goal), r.String(c.Page)
	if c.Claim != nil {
		cl := *c.Claim
		cl.Reason = r.String(cl.Reason)
		c.Claim = &cl
	}
	for i := range c.Steps {
		s := &c.Steps[i]
		s.URL, s.Title, s.Error = r.String(s.URL), r.String(s.Title), r.String(s.Error)
		acts := make([]judge.Action, len(s.Actions))
		for j, a := range s.Actions {
			a.Args = r.String(a.Args)
			acts[j] = a
		}
		s.Actions = acts
	}
}

// redactingSink redacts everything reported to a Sink: the last line of
// defense behind the redaction at the sources.
type redactingSink struct {
	Sink
	r *Redactor
}

func (s redactingSink) StepFinished(ctx context.Context, st Step) error {
	return s.Sink.StepFinished(ctx, s.r.Step(st))
}

func (s redactingSink) PromptRun(ctx context.Context, pr PromptRun) error {
	return s.Sink.PromptRun(ctx, s.r.PromptRun(pr))
}

func (s redactingSink) Event(ctx context.Context, e Event) error {
	return s.Sink.Event(ctx, s.r.Event(e))
}

// err returns err with its message redacted, still matching what err
// matches (errors.Is, errors.As).
func (r *Redactor) err(err error) error {
	if !r.Active() || err == nil {
		return err
	}
	if msg := r.String(err.Error()); msg != err.Error() {
		return &redactedError{err: err, msg: msg}
	}
	return err
}

type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
