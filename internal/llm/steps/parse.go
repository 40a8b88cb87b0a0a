package steps

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// StepKind says what a step does.
type StepKind string

// The kinds of step.
const (
	Click       StepKind = "click"        // click the element named Target
	Fill        StepKind = "fill"         // fill the field Target (the focused one when "") with Value
	Select      StepKind = "select"       // select the option Value in the field Target
	Check       StepKind = "check"        // check the checkbox, radio or switch Target
	Uncheck     StepKind = "uncheck"      // uncheck Target
	Press       StepKind = "press"        // press the keys Value ("Enter", "Control+A", "Tab Tab")
	Open        StepKind = "open"         // open the URL or path Target
	WaitText    StepKind = "wait_text"    // wait for the text Value to appear
	WaitTime    StepKind = "wait_time"    // wait Value seconds
	ExpectText  StepKind = "expect_text"  // the page shows the text Value
	ExpectURL   StepKind = "expect_url"   // the URL contains Value, or matches it as a glob with *
	ExpectTitle StepKind = "expect_title" // the title contains Value
	Scroll      StepKind = "scroll"       // scroll the page (Value: up, down, top, bottom) or Target into view
)

// Step is one instruction of a script.
type Step struct {
	Kind StepKind
	// Target is what the step acts on: an element's name (Click, Fill,
	// Select, Check, Uncheck, Scroll), or a URL or path (Open). Role nouns
	// of the wording ("the Save button") are not part of it.
	Target string
	// Value is what the step puts in or looks for: the text (Fill), the
	// option (Select), the keys (Press), the seconds (WaitTime), the text
	// (WaitText, ExpectText, ExpectTitle), the pattern (ExpectURL), the
	// direction (Scroll).
	Value string
	// Role is the role the wording names ("button" in "Click the Save
	// button"), "" when it names none. It breaks ties between elements.
	Role string
	// Line is the step's line in the goal, from 1.
	Line int
	// Text is the step as written, without its list marker, leading
	// connector ("Then") and final period.
	Text string

	// phrase is the target as written, role noun included, which is also
	// tried against element names ("Shopping list" is a name, not a list).
	phrase string
}

// ParseError says which line of a goal could not be read as a step.
type ParseError struct {
	// Line is the line in the goal, from 1; 0 when the goal has no steps.
	Line int
	// Text is the part of the line that was not understood.
	Text string
	// Reason says what was expected.
	Reason string
}

// Error says which line and why: line 3: cannot understand "…": …
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return e.Reason
	}
	return fmt.Sprintf("line %d: cannot understand %q: %s", e.Line, e.Text, e.Reason)
}

// Parse reads a goal as steps, one per line or sentence. Errors are a
// *ParseError naming the first line it cannot understand.
func Parse(goal string) ([]Step, error) {
	var out []Step
	for i, raw := range strings.Split(strings.ReplaceAll(goal, "\r\n", "\n"), "\n") {
		line := stripMarker(strings.TrimSpace(raw))
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "//") {
			continue
		}
		chunks, ok := splitSteps(line)
		if !ok && strings.HasSuffix(line, ":") {
			continue // a heading such as "Steps:"
		}
		for _, chunk := range chunks {
			text := cleanChunk(chunk)
			st, err := parseStep(text)
			if err != nil {
				return nil, &ParseError{Line: i + 1, Text: text, Reason: err.Error()}
			}
			st.Line, st.Text = i+1, text
			out = append(out, st)
		}
	}
	if len(out) == 0 {
		return nil, &ParseError{Reason: "the goal has no steps"}
	}
	return out, nil
}

var markerRe = regexp.MustCompile(`^(?:(?i:step)\s*\d+\s*[.:)-]?|\(?\d+[.):]|\d+\s+-|[-*•+–—]|\[[ xX]?\])\s*`)

// stripMarker removes list markers: "1.", "2)", "(3)", "Step 4:", "- ".
func stripMarker(s string) string {
	for {
		m := markerRe.FindStringIndex(s)
		if m == nil || m[1] == 0 {
			return s
		}
		s = strings.TrimSpace(s[m[1]:])
	}
}

var connectors = []string{"and then", "and", "then", "next", "finally", "lastly", "firstly", "first", "after that", "afterwards", "now", "please", "also"}

// cleanChunk trims a step's text: leading connectors, separators and the
// final period.
func cleanChunk(s string) string {
	s = strings.Trim(s, " \t,;")
	for changed := true; changed; {
		changed = false
		for _, c := range connectors {
			if rest, ok := cutPhrase(s, c); ok {
				s, changed = strings.TrimLeft(rest, " ,"), true
				break
			}
		}
	}
	if n := len(s); n > 0 && (s[n-1] == '.' || s[n-1] == '!') {
		s = strings.TrimSpace(s[:n-1])
	}
	return s
}

// verbs are the words a step starts with (after connectors).
var verbs = map[string]bool{
	"click": true, "tap": true, "press": true, "push": true, "hit": true, "open": true, "visit": true,
	"load": true, "go": true, "navigate": true, "browse": true, "switch": true, "type": true, "enter": true,
	"input": true, "write": true, "fill": true, "set": true, "clear": true, "empty": true, "select": true,
	"choose": true, "pick": true, "check": true, "tick": true, "uncheck": true, "untick": true,
	"wait": true, "expect": true, "verify": true, "assert": true, "ensure": true, "confirm": true,
	"make": true, "scroll": true,
}

// split is a place a line may hold two steps: the first ends at left, the
// second starts at right. A forced split (a sentence break before a verb,
// or "then") is always taken.
type split struct {
	left, right int
	forced      bool
}

// splitSteps cuts a line into steps at sentence breaks (". ", "; ", ", ",
// " then ", " and ") where both sides read as steps; the first cut that
// makes every part a step wins. When none does, it cuts at every break
// followed by a verb (so the error names the first bad part) and reports
// false.
func splitSteps(s string) ([]string, bool) {
	var cands []split
	for i := 0; i < len(s); i++ {
		if _, after, ok := leadingQuoted(s[i:]); ok && (i == 0 || s[i-1] == ' ' || s[i-1] == '(') {
			i = len(s) - len(after) - 1
			continue
		}
		var c split
		switch {
		case strings.ContainsRune(".;!,", rune(s[i])) && i+1 < len(s) && s[i+1] == ' ':
			c = split{i, i + 1, s[i] != ','}
		case s[i] == ' ' && (hasPhrase(s[i+1:], "then") || hasPhrase(s[i+1:], "and")):
			c = split{i, i + 1, false}
		default:
			continue
		}
		right := strings.TrimSpace(s[c.right:])
		then := hasPhrase(right, "then") || hasPhrase(right, "and then")
		if w, _ := cutWord(cleanChunk(right)); verbs[lowerASCII(w)] || then {
			c.forced = c.forced || then
			cands = append(cands, c)
		}
	}
	type result struct {
		parts []string
		ok    bool
	}
	memo := map[int]result{}
	var solve func(start int) ([]string, bool)
	solve = func(start int) ([]string, bool) {
		if r, ok := memo[start]; ok {
			return r.parts, r.ok
		}
		r := result{}
		blocked := false // a forced split lies ahead: the rest cannot be one step
		for _, c := range cands {
			if c.left <= start {
				continue
			}
			if _, err := parseStep(cleanChunk(s[start:c.left])); err == nil {
				if rest, ok := solve(c.right); ok {
					r = result{append([]string{s[start:c.left]}, rest...), true}
					break
				}
			}
			if c.forced {
				blocked = true
				break
			}
		}
		if !r.ok && !blocked {
			if _, err := parseStep(cleanChunk(s[start:])); err == nil {
				r = result{[]string{s[start:]}, true}
			}
		}
		memo[start] = r
		return r.parts, r.ok
	}
	if parts, ok := solve(0); ok {
		return parts, true
	}
	var parts []string
	start := 0
	for _, c := range cands {
		if c.left > start && strings.TrimSpace(s[start:c.left]) != "" {
			parts = append(parts, s[start:c.left])
			start = c.right
		}
	}
	return append(parts, s[start:]), false
}

// parseStep reads one step (already cleaned).
func parseStep(s string) (Step, error) {
	verb, rest := cutWord(s)
	switch v := lowerASCII(verb); v {
	case "click", "tap":
		return clickStep(trimWord(rest, "on"), v)
	case "press", "push", "hit":
		if keys, ok := keySpec(rest); ok {
			return Step{Kind: Press, Value: keys}, nil
		}
		return clickStep(trimWord(rest, "on"), v)
	case "open", "visit", "load":
		return openStep(rest, v)
	case "go", "navigate", "browse", "switch":
		r, ok := cutPhrase(rest, "to")
		if !ok {
			return Step{}, fmt.Errorf("expected %q followed by \"to <url or name>\"", verb)
		}
		return openStep(r, v+" to")
	case "type", "enter", "input", "write":
		return typeStep(rest, v)
	case "fill":
		return fillStep(rest)
	case "set":
		field, value, ok := splitAt(rest, []string{"to"}, false)
		if !ok {
			return Step{}, fmt.Errorf("expected \"Set <field> to <value>\"")
		}
		return fieldStep(Fill, field, value, "Set")
	case "clear", "empty":
		return fieldStep(Fill, rest, `""`, verb)
	case "select", "choose", "pick":
		if option, field, ok := splitAt(rest, []string{"from", "in"}, true); ok {
			return fieldStep(Select, field, option, verb)
		}
		return clickStep(rest, v)
	case "check", "tick":
		if isExpectPhrase(rest) {
			return parseExpect(rest)
		}
		return checkStep(Check, rest, v)
	case "uncheck", "untick":
		return checkStep(Uncheck, rest, v)
	case "wait":
		return parseWait(rest)
	case "expect", "verify", "assert", "ensure", "confirm":
		return parseExpect(rest)
	case "make":
		if r, ok := cutPhrase(rest, "sure"); ok {
			return parseExpect(r)
		}
	case "scroll":
		return parseScroll(rest)
	}
	return Step{}, fmt.Errorf("a step starts with Click, Type, Fill, Select, Check, Uncheck, Press, Open, Go to, Wait, Expect or Scroll")
}

func clickStep(rest, verb string) (Step, error) {
	st := Step{Kind: Click}
	st.Target, st.Role, st.phrase = targetName(rest)
	if st.Target == "" {
		return Step{}, fmt.Errorf("%s what? expected %q", verb, verb+" <name>")
	}
	return st, nil
}

func checkStep(kind StepKind, rest, verb string) (Step, error) {
	st := Step{Kind: kind}
	st.Target, st.Role, st.phrase = targetName(rest)
	if st.Target == "" {
		return Step{}, fmt.Errorf("%s what? expected %q", verb, verb+" <name>")
	}
	return st, nil
}

func openStep(rest, verb string) (Step, error) {
	if u := unquote(strings.TrimSpace(rest)); isURLish(u) {
		return Step{Kind: Open, Target: u}, nil
	}
	st, err := clickStep(rest, verb)
	if err != nil {
		return Step{}, fmt.Errorf("expected %q followed by a URL, a path or the name of a link", verb)
	}
	return st, nil
}

// typeStep reads "Type <value> [into|in <field>]".
func typeStep(rest, verb string) (Step, error) {
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return Step{}, fmt.Errorf("expected %q", verb+" <value> into <field>")
	}
	value, field, ok := splitAt(rest, []string{"into", "in"}, false)
	if !ok {
		if inner, after, q := leadingQuoted(rest); q && strings.TrimSpace(after) != "" {
			return Step{}, fmt.Errorf("expected \"into <field>\" after %q", inner)
		}
		return Step{Kind: Fill, Value: unquote(rest)}, nil // the focused field
	}
	return fieldStep(Fill, field, value, verb)
}

// fillStep reads "Fill [in|out] <field> with <value>" and "Fill <value>
// into <field>".
func fillStep(rest string) (Step, error) {
	r := rest
	for _, w := range []string{"in", "out"} {
		if after, ok := cutPhrase(r, w); ok {
			r = after
			break
		}
	}
	if field, value, ok := splitAt(r, []string{"with"}, false); ok {
		return fieldStep(Fill, field, value, "Fill")
	}
	if value, field, ok := splitAt(r, []string{"into"}, false); ok {
		return fieldStep(Fill, field, value, "Fill")
	}
	return Step{}, fmt.Errorf("expected \"Fill <field> with <value>\"")
}

func fieldStep(kind StepKind, field, value, verb string) (Step, error) {
	st := Step{Kind: kind, Value: unquote(strings.TrimSpace(value))}
	st.Target, st.Role, st.phrase = targetName(field)
	if st.Target == "" {
		return Step{}, fmt.Errorf("%s needs the name of a field", verb)
	}
	if kind == Select && st.Value == "" {
		return Step{}, fmt.Errorf("%s needs an option", verb)
	}
	return st, nil
}

var waitTimeRe = regexp.MustCompile(`(?i)^(?:for\s+)?(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?$`)

var pageLoadRe = regexp.MustCompile(`(?i)^(?:for\s+)?(?:the\s+)?page(?:\s+to)?\s+(?:load|loads|loaded|to finish loading)$`)

var waitSuffixes = []string{"to appear", "to be visible", "to be shown", "to be displayed", "to show up", "to show", "appears", "is visible", "is shown", "is displayed", "shows up"}

// parseWait reads "Wait for <text>", "Wait until <text> appears" and
// "Wait <n> seconds".
func parseWait(rest string) (Step, error) {
	r := strings.TrimSpace(rest)
	if m := waitTimeRe.FindStringSubmatch(r); m != nil {
		n, _ := strconv.ParseFloat(m[1], 64)
		switch u := strings.ToLower(m[2]); {
		case strings.HasPrefix(u, "ms") || strings.HasPrefix(u, "milli"):
			n /= 1000
		case u == "m" || strings.HasPrefix(u, "min"):
			n *= 60
		}
		if n <= 0 || n > 600 {
			return Step{}, fmt.Errorf("a wait lasts more than 0 and at most 600 seconds")
		}
		return Step{Kind: WaitTime, Value: strconv.FormatFloat(n, 'f', -1, 64)}, nil
	}
	if pageLoadRe.MatchString(r) {
		// The runner lets the page settle after every action; a short
		// pause is all this can add.
		return Step{Kind: WaitTime, Value: "1"}, nil
	}
	var text string
	if t, ok := cutPhrase(r, "for"); ok {
		text = valueWithSuffix(t, waitSuffixes)
	} else if t, ok := cutPhrase(r, "until"); ok {
		for _, p := range []string{"the page shows", "the page contains", "page shows", "page contains", "i see", "you see"} {
			if after, ok := cutPhrase(t, p); ok {
				t = after
				break
			}
		}
		text = valueWithSuffix(t, waitSuffixes)
	}
	if text == "" {
		return Step{}, fmt.Errorf("expected \"Wait for <text>\" or \"Wait <n> seconds\"")
	}
	return Step{Kind: WaitText, Value: text}, nil
}

var (
	expectVerbs = []string{
		"should contain", "should include", "should be", "should match", "should equal", "should have",
		"to contain", "to include", "to be", "to match", "to equal", "to have", "to end with", "to start with",
		"contains", "includes", "is", "matches", "equals", "has", "ends with", "starts with", "=", ":",
	}
	textVerbs = []string{
		"should show", "should contain", "should display", "should include", "should have",
		"to show", "to contain", "to display", "to include", "to have", "to say",
		"shows", "contains", "displays", "includes", "has", "says",
	}
	// textValueVerbs are the verb phrases dropped before an expected
	// text: only unambiguous ones, since the text itself may start with
	// "is" or "has".
	textValueVerbs = []string{"should be", "should contain", "should say", "to be", "to contain", "to say", "=", ":"}
	shownSuffixes  = []string{"is shown", "is visible", "is displayed", "is present", "is on the page", "appears", "to appear", "to be visible", "to be shown", "to be displayed", "to be present"}
)

// isExpectPhrase reports whether the words after "Check" ask to verify
// rather than to tick a checkbox.
func isExpectPhrase(rest string) bool {
	for _, p := range []string{"that", "whether", "if", "the url", "url", "the title"} {
		if _, ok := cutPhrase(rest, p); ok {
			return true
		}
	}
	if r, ok := cutPhrase(rest, "the page"); ok {
		for _, v := range textVerbs {
			if _, ok := cutPhrase(r, v); ok {
				return true
			}
		}
	}
	return false
}

// parseExpect reads what follows Expect (and its synonyms).
func parseExpect(rest string) (Step, error) {
	r := strings.TrimSpace(rest)
	for _, w := range []string{"that", "whether", "if", "the"} {
		if after, ok := cutPhrase(r, w); ok {
			r = after
		}
	}
	page := false
	for _, w := range []string{"page's", "page", "current"} {
		if after, ok := cutPhrase(r, w); ok {
			r, page = after, true
		}
	}
	for _, f := range []struct {
		words []string
		kind  StepKind
	}{
		{[]string{"url", "address", "location"}, ExpectURL},
		{[]string{"title"}, ExpectTitle},
		{[]string{"text"}, ExpectText},
	} {
		for _, w := range f.words {
			after, ok := cutPhrase(r, w)
			if !ok {
				continue
			}
			var v string
			if f.kind == ExpectText {
				v = valueWithSuffix(afterVerb(after, textValueVerbs), shownSuffixes)
			} else {
				v = unquote(afterVerb(after, expectVerbs))
			}
			if v == "" {
				return Step{}, fmt.Errorf("expected \"Expect %s <…>\" with something to look for", w)
			}
			return Step{Kind: f.kind, Value: v}, nil
		}
	}
	if page {
		if v := valueWithSuffix(afterVerb(r, textVerbs), nil); v != "" {
			return Step{Kind: ExpectText, Value: v}, nil
		}
	}
	for _, p := range []string{"to see", "i see", "you see", "we see", "see"} {
		if after, ok := cutPhrase(r, p); ok {
			if v := valueWithSuffix(after, shownSuffixes); v != "" {
				return Step{Kind: ExpectText, Value: v}, nil
			}
		}
	}
	if v, ok := shownText(r); ok {
		return Step{Kind: ExpectText, Value: v}, nil
	}
	if inner, after, ok := leadingQuoted(r); ok && strings.TrimSpace(after) == "" && inner != "" {
		return Step{Kind: ExpectText, Value: inner}, nil
	}
	return Step{}, fmt.Errorf(`cannot tell what to expect; write Expect text "…", Expect URL <pattern> or Expect title "…"`)
}

// shownText reads "<text> is shown" and its variants.
func shownText(s string) (string, bool) {
	if inner, after, ok := leadingQuoted(s); ok {
		a := strings.TrimSpace(after)
		for _, suf := range shownSuffixes {
			if strings.EqualFold(a, suf) {
				return inner, inner != ""
			}
		}
		return "", false
	}
	l := lowerASCII(s)
	for _, suf := range shownSuffixes {
		if strings.HasSuffix(l, " "+suf) {
			v := strings.TrimSpace(s[:len(s)-len(suf)-1])
			return unquote(v), v != ""
		}
	}
	return "", false
}

// afterVerb drops a leading verb phrase ("to contain", "is").
func afterVerb(s string, verbs []string) string {
	s = strings.TrimSpace(s)
	for _, v := range verbs {
		if after, ok := cutPhrase(s, v); ok {
			return strings.TrimSpace(after)
		}
		if (v == "=" || v == ":") && strings.HasPrefix(s, v) {
			return strings.TrimSpace(s[1:])
		}
	}
	return s
}

// valueWithSuffix unquotes a value, dropping a trailing phrase such as "to
// appear" outside the quotes.
func valueWithSuffix(s string, suffixes []string) string {
	s = strings.TrimSpace(s)
	if inner, after, ok := leadingQuoted(s); ok {
		a := strings.TrimSpace(after)
		if a == "" {
			return inner
		}
		for _, suf := range suffixes {
			if strings.EqualFold(a, suf) {
				return inner
			}
		}
		return s
	}
	l := lowerASCII(s)
	for _, suf := range suffixes {
		if strings.HasSuffix(l, " "+suf) {
			return unquote(strings.TrimSpace(s[:len(s)-len(suf)-1]))
		}
	}
	return unquote(s)
}

// parseScroll reads "Scroll down|up|to the top|to the bottom" and
// "Scroll to <name>".
func parseScroll(rest string) (Step, error) {
	var dir []string
	for _, w := range strings.Fields(lowerASCII(rest)) {
		switch w {
		case "the", "page", "to", "a", "bit", "more", "of", "way", "all", "window", "further", "some":
		default:
			dir = append(dir, w)
		}
	}
	switch {
	case len(dir) == 0:
		return Step{Kind: Scroll, Value: "down"}, nil
	case len(dir) == 1 && (dir[0] == "down" || dir[0] == "up" || dir[0] == "top" || dir[0] == "bottom"):
		return Step{Kind: Scroll, Value: dir[0]}, nil
	}
	if r, ok := cutPhrase(rest, "to"); ok {
		st, err := clickStep(r, "Scroll to")
		if err == nil {
			st.Kind = Scroll
			return st, nil
		}
	}
	return Step{}, fmt.Errorf("expected \"Scroll down\", \"Scroll up\", \"Scroll to the bottom\" or \"Scroll to <name>\"")
}

// roleNouns map the words that name a kind of element to its ARIA role
// (longest first, so "radio button" wins over "button").
var roleNouns = []struct{ noun, role string }{
	{"menu item", "menuitem"}, {"radio button", "radio"}, {"check box", "checkbox"}, {"text field", "textbox"},
	{"input field", "textbox"}, {"text box", "textbox"}, {"search box", "searchbox"}, {"search field", "searchbox"},
	{"combo box", "combobox"}, {"drop-down", "combobox"}, {"drop down", "combobox"}, {"select box", "combobox"},
	{"dropdown", "combobox"}, {"combobox", "combobox"}, {"checkbox", "checkbox"}, {"textbox", "textbox"},
	{"listbox", "listbox"}, {"button", "button"}, {"link", "link"}, {"tab", "tab"}, {"radio", "radio"},
	{"switch", "switch"}, {"toggle", "switch"}, {"option", "option"}, {"field", "textbox"}, {"input", "textbox"},
	{"box", "textbox"}, {"menu", ""}, {"page", "link"}, {"icon", ""}, {"list", "listbox"},
}

// targetName reads an element's name from "the "Save" button", "Sign in
// link" or "Remove next to "Red mug"": the name, the role the wording
// names, and the phrase as written.
func targetName(s string) (name, role, phrase string) {
	s = strings.TrimSpace(s)
	for _, a := range []string{"the", "a", "an"} {
		if after, ok := cutPhrase(s, a); ok {
			s = strings.TrimSpace(after)
			break
		}
	}
	if inner, after, ok := leadingQuoted(s); ok {
		after = strings.TrimSpace(after)
		if after == "" {
			return inner, "", inner
		}
		for _, n := range roleNouns {
			if strings.EqualFold(after, n.noun) {
				return inner, n.role, inner
			}
		}
		// A qualifier ("next to "Red mug""): keep its words, which the
		// element's context may match.
		q := inner + " " + stripQuotes(after)
		return q, "", q
	}
	s = unquote(s)
	l := lowerASCII(s)
	for _, n := range roleNouns {
		if strings.HasSuffix(l, " "+n.noun) {
			name := strings.TrimSpace(s[:len(s)-len(n.noun)-1])
			return unquote(name), n.role, s
		}
	}
	return s, "", s
}
