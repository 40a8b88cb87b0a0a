package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// ModelName is the step controller's model name.
const ModelName = "steps-v1"

// The runner's tools the controller calls.
const (
	toolClick    = "browser_click"
	toolFill     = "browser_fill"
	toolSelect   = "browser_select"
	toolCheck    = "browser_check"
	toolPressKey = "browser_press_key"
	toolNavigate = "browser_navigate"
	toolWait     = "browser_wait"
	toolScroll   = "browser_scroll"
	toolComplete = "complete_task"
)

const (
	// maxTries is how often one step is tried before the run fails.
	maxTries = 3
	// waitTextMS bounds a wait for text.
	waitTextMS = 10000
	// maxWaitChunk is the longest one browser_wait may be asked to wait.
	maxWaitChunk = 30.0
)

// kindTools is the tool each kind of step calls.
var kindTools = map[StepKind]string{
	Click: toolClick, Fill: toolFill, Select: toolSelect, Check: toolCheck, Uncheck: toolCheck,
	Press: toolPressKey, Open: toolNavigate, WaitText: toolWait, WaitTime: toolWait,
	ExpectText: toolWait, ExpectURL: toolWait, ExpectTitle: toolWait, Scroll: toolScroll,
}

// failFast are the action errors a retry cannot mend.
var failFast = map[string]bool{"domain_blocked": true, "human_rejected": true}

// model runs one script; a run builds a fresh one.
type model struct {
	steps []Step
	// needs maps each tool the script calls to the first step needing it.
	needs map[string]int

	mu       sync.Mutex
	cur      int             // the step in progress
	tries    int             // failed attempts at it
	tried    map[string]bool // elements tried for it
	waited   bool            // its one wait (an unsatisfied Expect) was sent
	waitLeft float64         // seconds still to wait (WaitTime)
	verified []string        // expectations met, for the final reason
	// reclaimed: a success claim refused because the browser crashed as
	// it was made has been made again once.
	reclaimed bool
	seq       int           // numbers tool call IDs
	pend      pending       // the last tool call sent
	last      *llm.Response // the last answer
}

// purpose is why a tool call was sent.
type purpose int

const (
	forStep   purpose = iota + 1 // the current step's action
	forExpect                    // the one wait an unsatisfied Expect gets
	forFinish                    // complete_task
)

// pending is the tool call awaiting its result.
type pending struct {
	id      string
	tool    string
	purpose purpose
	key     string  // the element acted on
	status  string  // complete_task's status
	chunk   float64 // seconds of a WaitTime step this call waits
}

// decision is the next tool call.
type decision struct {
	tool    string
	args    map[string]any
	text    string
	purpose purpose
	key     string
	status  string
	chunk   float64
}

// New builds the step controller for one run: s.Goal is its script. Errors
// wrap llm.ErrInvalidRequest and a *ParseError naming the line it could
// not read.
func New(s llm.Settings) (llm.Model, error) {
	steps, err := Parse(s.Goal)
	if err != nil {
		return nil, fmt.Errorf("steps: the goal is not a script of steps (%w): %w", llm.ErrInvalidRequest, err)
	}
	m := &model{steps: steps, needs: map[string]int{toolComplete: 0}, tried: map[string]bool{}}
	for i, st := range steps {
		if _, ok := m.needs[kindTools[st.Kind]]; !ok {
			m.needs[kindTools[st.Kind]] = i
		}
	}
	m.enter(0)
	return m, nil
}

// Provider is "steps".
func (m *model) Provider() string { return llm.ProviderSteps }

// Name is "steps-v1".
func (m *model) Name() string { return ModelName }

// Complete reads the outcome of the previous tool call from req.Messages,
// looks at req.Observation and answers with the next step's tool call.
func (m *model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil || req.Observation == nil {
		return nil, fmt.Errorf("steps: the request has no Observation of the page: %w", llm.ErrInvalidRequest)
	}
	if err := m.checkTools(req.Tools); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pend.id != "" {
		res, ok := findResult(req.Messages, m.pend)
		if !ok {
			// Asked again before the call was answered: the same call.
			return cloneResponse(m.last), nil
		}
		d, err := m.absorb(res)
		if err != nil || d != nil {
			if err != nil {
				return nil, err
			}
			return m.emit(d), nil
		}
	}
	return m.emit(m.next(req.Observation)), nil
}

// checkTools fails when the request does not offer a tool the script
// needs.
func (m *model) checkTools(tools []llm.Tool) error {
	offered := make(map[string]bool, len(tools))
	for _, t := range tools {
		offered[t.Name] = true
	}
	for name, i := range m.needs {
		if !offered[name] {
			return fmt.Errorf("steps: the request offers no %s tool, which step %d (%s) needs: %w",
				name, i+1, m.steps[i].Text, llm.ErrInvalidRequest)
		}
	}
	return nil
}

// outcome is what a tool result says.
type outcome struct {
	ok           bool
	problem      string // "code: message" on failure
	code         string
	acknowledged bool
}

func readOutcome(res *llm.ToolResult) outcome {
	var body struct {
		Success      *bool  `json:"success"`
		Error        string `json:"error"`
		Message      string `json:"message"`
		Acknowledged *bool  `json:"acknowledged"`
	}
	parsed := json.Unmarshal([]byte(res.Content), &body) == nil
	o := outcome{
		ok:           !res.IsError && (body.Success == nil || *body.Success),
		code:         body.Error,
		acknowledged: !res.IsError && (body.Acknowledged == nil || *body.Acknowledged),
	}
	switch {
	case body.Error != "" && body.Message != "":
		o.problem = body.Error + ": " + body.Message
	case body.Error != "":
		o.problem = body.Error
	case body.Message != "":
		o.problem = body.Message
	case !parsed:
		o.problem = res.Content
	default:
		o.problem = "the action failed"
	}
	o.problem = truncate(o.problem, 300)
	return o
}

// absorb takes in the result of the pending call. It returns a decision
// when the run must end (a step gave up, success was not acknowledged);
// nil to go on with the next step.
func (m *model) absorb(res *llm.ToolResult) (*decision, error) {
	o := readOutcome(res)
	st := m.steps[min(m.cur, len(m.steps)-1)]
	switch m.pend.purpose {
	case forFinish:
		switch {
		case o.acknowledged:
			// The run should have ended; say the same again.
			return m.redo(), nil
		case m.pend.status == "success" && !m.reclaimed && strings.Contains(o.problem, crashMarker):
			// The browser crashed as success was claimed: the service
			// reopened the page, and the claim is made once more there
			// rather than a crash of the service's becoming a verdict
			// against the site.
			m.reclaimed = true
			return m.redo(), nil
		case m.pend.status == "success":
			return m.giveUp("", "The run did not accept success: "+o.problem), nil
		default:
			return nil, fmt.Errorf("steps: complete_task failed was not acknowledged (%s): %w", o.problem, llm.ErrRefused)
		}
	case forExpect:
		return nil, nil // checked again on the fresh page
	}
	if o.ok {
		m.waitLeft -= m.pend.chunk
		if st.Kind != WaitTime || m.waitLeft <= 0 {
			m.enter(m.cur + 1)
		}
		return nil, nil
	}
	if failFast[o.code] {
		return m.giveUp("", fmt.Sprintf("Step %d (%s) failed: %s", m.cur+1, st.Text, o.problem)), nil
	}
	m.tries++
	if m.pend.key != "" {
		m.tried[m.pend.key] = true
	}
	if m.tries >= maxTries {
		return m.giveUp("", fmt.Sprintf("Step %d (%s) failed after %d attempts: %s", m.cur+1, st.Text, maxTries, o.problem)), nil
	}
	return nil, nil
}

// crashMarker is how the run's answer to a refused claim names a browser
// crash (the error category of the step the claim was made in).
const crashMarker = "browser_crash"

// redo is the last decision again.
func (m *model) redo() *decision {
	var args map[string]any
	tc := m.last.ToolCalls[0]
	_ = json.Unmarshal(tc.Arguments, &args) // we wrote them
	return &decision{tool: tc.Name, args: args, text: m.last.Text, purpose: m.pend.purpose, status: m.pend.status}
}

// enter makes step i the current one.
func (m *model) enter(i int) {
	m.cur, m.tries, m.waited, m.waitLeft = i, 0, false, 0
	clear(m.tried)
	if i < len(m.steps) && m.steps[i].Kind == WaitTime {
		m.waitLeft, _ = strconv.ParseFloat(m.steps[i].Value, 64)
	}
}

// next decides the next tool call on the page obs: Expect steps already
// met are passed over within the same call.
func (m *model) next(obs *llm.Observation) *decision {
	var notes []string
	n := len(m.steps)
	for m.cur < n {
		st := m.steps[m.cur]
		head := fmt.Sprintf("Step %d/%d: %s", m.cur+1, n, st.Text)
		if m.tries > 0 {
			head = fmt.Sprintf("Step %d/%d (attempt %d/%d): %s", m.cur+1, n, m.tries+1, maxTries, st.Text)
		}
		switch st.Kind {
		case ExpectText, ExpectURL, ExpectTitle:
			ok, want, seen := expectation(st, obs)
			if ok {
				m.verified = append(m.verified, want)
				notes = append(notes, head+" ✓")
				m.enter(m.cur + 1)
				continue
			}
			if !m.waited {
				m.waited = true
				args := map[string]any{"seconds": 2}
				if st.Kind == ExpectText {
					args = map[string]any{"text": st.Value, "timeout_ms": waitTextMS}
				}
				return withNotes(notes, m.browser(st, toolWait, args, forExpect, head+" → not yet, waiting"))
			}
			return withNotes(notes, m.giveUp(head, fmt.Sprintf("Step %d (%s) failed: expected %s, saw %s", m.cur+1, st.Text, want, seen)))
		case WaitText:
			if pageShows(obs, st.Value) {
				notes = append(notes, head+" ✓ (already shown)")
				m.enter(m.cur + 1)
				continue
			}
			return withNotes(notes, m.browser(st, toolWait, map[string]any{"text": st.Value, "timeout_ms": waitTextMS}, forStep, head))
		}
		return withNotes(notes, m.act(st, obs, head))
	}
	reason := fmt.Sprintf("All %d steps done.", n)
	if len(m.verified) > 0 {
		reason = fmt.Sprintf("All %d steps done; verified %s.", n, strings.Join(m.verified, ", "))
	}
	return withNotes(notes, &decision{
		tool: toolComplete, args: map[string]any{"status": "success", "reason": reason},
		text: reason, purpose: forFinish, status: "success",
	})
}

// act decides the action of a step that acts on the page.
func (m *model) act(st Step, obs *llm.Observation, head string) *decision {
	switch st.Kind {
	case Press:
		return m.browser(st, toolPressKey, map[string]any{"keys": st.Value}, forStep, head+" → "+st.Value)
	case Open:
		u, err := resolveURL(obs.URL, st.Target)
		if err != nil {
			return m.giveUp(head, fmt.Sprintf("Step %d (%s) failed: %v", m.cur+1, st.Text, err))
		}
		return m.browser(st, toolNavigate, map[string]any{"url": u}, forStep, head+" → "+u)
	case WaitTime:
		chunk := min(m.waitLeft, maxWaitChunk)
		d := m.browser(st, toolWait, map[string]any{"seconds": chunk}, forStep, head)
		d.chunk = chunk
		return d
	case Scroll:
		if st.Target == "" {
			return m.browser(st, toolScroll, map[string]any{"direction": st.Value}, forStep, head)
		}
	}
	c, fail := m.resolve(st, obs, head)
	if fail != nil {
		return fail
	}
	args := map[string]any{"ref": c.el.Ref}
	tool := kindTools[st.Kind]
	switch st.Kind {
	case Fill:
		args["value"] = st.Value
	case Select:
		args["value"] = st.Value
		if i := optionIndex(st.Value, c.el.Options); i >= 0 {
			args["value"] = c.el.Options[i]
		}
	case Check, Uncheck:
		args["checked"] = st.Kind == Check
	}
	d := m.browser(st, tool, args, forStep, head+" → "+describe(c.el))
	d.key = c.key
	return d
}

// resolve finds the element a step acts on; on failure it returns the
// decision that ends the run.
func (m *model) resolve(st Step, obs *llm.Observation, head string) (candidate, *decision) {
	if st.Kind == Fill && st.Target == "" {
		var focused []llm.ObservedElement
		for _, el := range obs.Elements {
			if slices.Contains(el.State, "focused") {
				focused = append(focused, el)
			}
		}
		slices.SortStableFunc(focused, func(a, b llm.ObservedElement) int {
			return cmpDesc(b2f(slices.Contains(kindRoles[Fill], a.Role)), b2f(slices.Contains(kindRoles[Fill], b.Role)))
		})
		if len(focused) > 0 {
			return candidate{el: focused[0], key: "focused"}, nil
		}
		return candidate{}, m.giveUp(head, fmt.Sprintf("Step %d (%s) failed: no field has focus; name one: Type <value> into <field>", m.cur+1, st.Text))
	}
	eligible, closest := rank(st, obs.Elements)
	if len(eligible) == 0 {
		var names []string
		for _, c := range closest {
			names = append(names, fmt.Sprintf("%s %q", c.el.Role, truncate(c.el.Name, 60)))
		}
		near := "nothing close"
		if len(names) > 0 {
			near = strings.Join(names, ", ")
		}
		return candidate{}, m.giveUp(head, fmt.Sprintf("Step %d (%s) failed: no element matches '%s' (closest: %s)", m.cur+1, st.Text, st.Target, near))
	}
	for _, c := range eligible {
		if !m.tried[c.key] {
			return c, nil
		}
	}
	return eligible[0], nil
}

// browser is a browser tool call for st.
func (m *model) browser(st Step, tool string, args map[string]any, p purpose, text string) *decision {
	args["reasoning"] = st.Text
	args["confidence"] = 1
	return &decision{tool: tool, args: args, text: text, purpose: p}
}

// giveUp ends the run as failed.
func (m *model) giveUp(head, reason string) *decision {
	text := reason
	if head != "" {
		text = head + " ✗ " + reason
	}
	return &decision{
		tool: toolComplete, args: map[string]any{"status": "failed", "reason": reason},
		text: text, purpose: forFinish, status: "failed",
	}
}

func withNotes(notes []string, d *decision) *decision {
	if len(notes) > 0 {
		d.text = strings.Join(append(notes, d.text), "; ")
	}
	return d
}

// emit sends d as the answer.
func (m *model) emit(d *decision) *llm.Response {
	m.seq++
	id := fmt.Sprintf("steps-%d", m.seq)
	args, err := json.Marshal(d.args)
	if err != nil {
		panic(fmt.Sprintf("steps: marshal tool arguments: %v", err)) // strings, numbers and booleans only
	}
	m.pend = pending{id: id, tool: d.tool, purpose: d.purpose, key: d.key, status: d.status, chunk: d.chunk}
	m.last = &llm.Response{
		Text:       d.text,
		ToolCalls:  []llm.ToolCall{{ID: id, Name: d.tool, Arguments: args}},
		StopReason: "tool_use",
		Model:      ModelName,
	}
	return cloneResponse(m.last)
}

func cloneResponse(r *llm.Response) *llm.Response {
	c := *r
	c.ToolCalls = append([]llm.ToolCall(nil), r.ToolCalls...)
	return &c
}

// findResult finds the result of the pending call: by its ID, or a result
// of the same tool without an ID in the last message.
func findResult(msgs []llm.Message, p pending) (*llm.ToolResult, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, part := range msgs[i].Parts {
			if r := part.ToolResult; r != nil && r.CallID == p.id {
				return r, true
			}
		}
	}
	if len(msgs) > 0 {
		for _, part := range msgs[len(msgs)-1].Parts {
			if r := part.ToolResult; r != nil && r.CallID == "" && r.Name == p.tool {
				return r, true
			}
		}
	}
	return nil, false
}

// expectation checks an Expect step against the page: whether it holds,
// what was expected and what was seen (for a failure's reason).
func expectation(st Step, obs *llm.Observation) (ok bool, want, seen string) {
	switch st.Kind {
	case ExpectURL:
		verb := "to contain"
		if strings.Contains(st.Value, "*") {
			verb = "to match"
		}
		return urlMatches(obs.URL, st.Value), fmt.Sprintf("the URL %s %q", verb, st.Value), fmt.Sprintf("%q", truncate(obs.URL, 200))
	case ExpectTitle:
		return strings.Contains(normalize(obs.Title), normalize(st.Value)),
			fmt.Sprintf("the title to contain %q", st.Value), fmt.Sprintf("%q", truncate(obs.Title, 200))
	}
	return pageShows(obs, st.Value), fmt.Sprintf("text %q", st.Value), fmt.Sprintf("page text %q", truncate(obs.Text, 200))
}

// pageShows reports whether the page shows text: in its visible text, its
// title or an element's name or value (case and spacing aside).
func pageShows(obs *llm.Observation, text string) bool {
	want := normalize(text)
	if want == "" {
		return true
	}
	if strings.Contains(normalize(obs.Text), want) || strings.Contains(normalize(obs.Title), want) {
		return true
	}
	for _, el := range obs.Elements {
		if strings.Contains(normalize(el.Name), want) || strings.Contains(normalize(el.Value), want) {
			return true
		}
	}
	return false
}

// urlMatches reports whether rawURL contains pattern (case-insensitive) or,
// when pattern has a *, matches it as a glob: the whole URL, or the URL
// without its fragment, query, or scheme and host.
func urlMatches(rawURL, pattern string) bool {
	if !strings.Contains(pattern, "*") {
		return strings.Contains(strings.ToLower(rawURL), strings.ToLower(pattern))
	}
	re, err := regexp.Compile("(?i)^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$")
	if err != nil {
		return false
	}
	forms := []string{rawURL}
	if u, err := url.Parse(rawURL); err == nil {
		v := *u
		v.Fragment, v.RawFragment = "", ""
		forms = append(forms, v.String())
		v.RawQuery, v.ForceQuery = "", false
		forms = append(forms, v.String(), u.EscapedPath())
		if u.RawQuery != "" {
			forms = append(forms, u.EscapedPath()+"?"+u.RawQuery)
		}
	}
	for _, f := range forms {
		if re.MatchString(f) {
			return true
		}
	}
	return false
}

// resolveURL makes target absolute: a path resolves against the page's
// URL, a host without scheme takes the page's scheme (https when the page
// has none).
func resolveURL(pageURL, target string) (string, error) {
	base, _ := url.Parse(pageURL)
	httpBase := base != nil && (base.Scheme == "http" || base.Scheme == "https") && base.Host != ""
	if schemeRe.MatchString(target) {
		return target, nil
	}
	if hostRe.MatchString(target) && !strings.HasPrefix(target, "/") {
		scheme := "https"
		if httpBase {
			scheme = base.Scheme
		}
		return scheme + "://" + target, nil
	}
	if !httpBase {
		return "", fmt.Errorf("cannot open the path %q: the current page (%q) has no http(s) URL to resolve it against", target, truncate(pageURL, 100))
	}
	ref, err := url.Parse(target)
	if err != nil {
		return "", fmt.Errorf("cannot open %q: %v", target, err)
	}
	return base.ResolveReference(ref).String(), nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
