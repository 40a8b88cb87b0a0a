package trace

import (
	"errors"
	"fmt"
	"go/format"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// Export (issue 8): a trace rendered for use outside Wayfinder, as a
// standalone Go test driving Chromium with go-rod (ExportGoTest), or as the
// plain step list the offline "steps" controller follows (ExportSteps).

// ErrNotExportable: an action of the trace has no form in the export
// format (a step list cannot hover, for one).
var ErrNotExportable = errors.New("not exportable")

// The engine's tools a trace records (internal/runner's names; the trace
// package does not depend on the runner).
const (
	toolClick    = "browser_click"
	toolFill     = "browser_fill"
	toolSelect   = "browser_select"
	toolScroll   = "browser_scroll"
	toolNavigate = "browser_navigate"
	toolBack     = "browser_back"
	toolPressKey = "browser_press_key"
	toolHover    = "browser_hover"
	toolCheck    = "browser_check"
	toolType     = "browser_type"
	toolWait     = "browser_wait"
	toolClickAt  = "browser_click_at"
	toolTabs     = "browser_tabs"
	toolExtract  = "browser_extract"
)

// placeholderPattern finds secret placeholders ({{name}}) in a value as
// the runner does: spaces inside the braces and upper case are forgiven.
var placeholderPattern = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.]{1,64})\s*\}\}`)

// SecretEnv is the environment variable an exported Go test reads the
// secret of placeholder {{name}} from: WAYFINDER_SECRET_ and the name in
// upper case with every other character than a letter or digit as "_"
// ({{app.password}}: WAYFINDER_SECRET_APP_PASSWORD).
func SecretEnv(name string) string {
	return "WAYFINDER_SECRET_" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, name)
}

// finalPattern is the URL pattern the end of a replay must reach: the
// final page's, else the last known URL's.
func finalPattern(t *Trace) string {
	if p := t.Final.Page.URLPattern; p != "" {
		return p
	}
	for _, u := range []string{t.Final.URL, lastURL(t), t.StartURL} {
		if u != "" {
			return URLPattern(u)
		}
	}
	return ""
}

func lastURL(t *Trace) string {
	for i := len(t.Actions) - 1; i >= 0; i-- {
		if u := t.Actions[i].URLAfter; u != "" {
			return u
		}
	}
	return ""
}

// actionPattern is the URL pattern of the page action a was taken on, ""
// when unknown.
func actionPattern(a Action) string {
	if a.Page.URLPattern != "" {
		return a.Page.URLPattern
	}
	if a.URL != "" {
		return URLPattern(a.URL)
	}
	return ""
}

// args reads the arguments of an action.
type args map[string]any

func (a args) str(k string) string {
	s, _ := a[k].(string)
	return s
}

func (a args) has(k string) bool {
	_, ok := a[k]
	return ok
}

func (a args) num(k string) (float64, bool) {
	switch v := a[k].(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	}
	return 0, false
}

func (a args) boolean(k string, def bool) bool {
	if b, ok := a[k].(bool); ok {
		return b
	}
	return def
}

// described is the target description an action was aimed by (css, role,
// name, text) when it had no ref.
func (a args) described() (css, role, name, text string) {
	m, _ := a["target"].(map[string]any)
	d := args(m)
	return d.str("css"), d.str("role"), d.str("name"), d.str("text")
}

// exportElement is what an export knows of an action's element: its fingerprint,
// else the model's description.
type exportElement struct {
	fp                    *Fingerprint
	css, role, name, text string
}

// elementOf is the element of action a; ok is false for an action without
// one (nothing recorded, or no ref or target given).
func elementOf(a Action) (exportElement, bool) {
	if a.Target != nil {
		fp := a.Target
		return exportElement{fp: fp, role: fp.Role, name: fp.Name, text: fp.Text}, true
	}
	css, role, name, text := args(a.Arguments).described()
	if css == "" && name == "" && text == "" {
		return exportElement{}, false
	}
	return exportElement{css: css, role: role, name: name, text: text}, true
}

// aimed reports whether action a was aimed at an element (a ref or a
// target description), whether or not it was recorded.
func aimed(a Action) bool {
	ar := args(a.Arguments)
	return ar.str("ref") != "" || ar.has("target") || a.Target != nil
}

// ExportSteps renders t as a plain step list in the grammar of the offline
// "steps" controller (internal/llm/steps): a commented header, one step per
// action, and a final Expect URL step with the final page's URL pattern.
// Elements are named by their accessible name (quoted), with the role's
// noun where the grammar has one; secrets stay placeholders. Extractions
// are kept as comments (they read, and do not change, the page). An
// action the grammar cannot express (hover, back, a double click, a click
// at coordinates, tabs, custom tools, an element without a name, a value
// on several lines) is an error wrapping ErrNotExportable that names its
// step.
func ExportSteps(t *Trace) (string, error) {
	var b strings.Builder
	b.WriteString("# Steps of a Wayfinder trace (record and replay), for the offline \"steps\" controller.\n")
	for _, l := range commentLines("Goal: " + t.Goal) {
		b.WriteString("# " + l + "\n")
	}
	for _, l := range commentLines("Start URL: " + t.StartURL) {
		b.WriteString("# " + l + "\n")
	}
	for _, a := range t.Actions {
		line, err := stepLine(a)
		if err != nil {
			return "", fmt.Errorf("step %d (%s): %w", a.Step, a.Tool, err)
		}
		b.WriteString(line + "\n")
	}
	final := finalPattern(t)
	if final == "" {
		return "", fmt.Errorf("the trace has no final URL: %w", ErrNotExportable)
	}
	q, err := stepQuote(final)
	if err != nil {
		return "", fmt.Errorf("final URL: %w", err)
	}
	b.WriteString("Expect URL " + q + "\n")
	return b.String(), nil
}

// roleNouns are the nouns of the steps grammar for roles ("Click the
// "Save" button").
var roleNouns = map[string]string{
	"button": "button", "link": "link", "tab": "tab", "menuitem": "menu item", "checkbox": "checkbox",
	"radio": "radio button", "switch": "switch", "option": "option", "combobox": "dropdown", "listbox": "listbox",
	"searchbox": "search box",
}

// stepLine is action a as one step.
func stepLine(a Action) (string, error) {
	ar := args(a.Arguments)
	el, hasEl := elementOf(a)
	name := func() (string, error) {
		if !hasEl || el.name == "" {
			return "", fmt.Errorf("its element has no accessible name to name it by: %w", ErrNotExportable)
		}
		return stepQuote(el.name)
	}
	named := func() (string, error) {
		n, err := name()
		if err != nil {
			return "", err
		}
		if noun := roleNouns[el.role]; noun != "" {
			return "the " + n + " " + noun, nil
		}
		return n, nil
	}
	switch a.Tool {
	case toolClick:
		if ar.boolean("double", false) {
			return "", fmt.Errorf("a double click has no step: %w", ErrNotExportable)
		}
		n, err := named()
		if err != nil {
			return "", err
		}
		return "Click " + n, nil
	case toolFill, toolType:
		value := ar.str("value")
		if a.Tool == toolType {
			value = ar.str("text")
		}
		if !aimed(a) {
			v, err := stepQuote(value)
			if err != nil {
				return "", err
			}
			return "Type " + v, nil // into the focused field
		}
		n, err := name()
		if err != nil {
			return "", err
		}
		if value == "" {
			return "Clear " + n, nil
		}
		v, err := stepQuote(value)
		if err != nil {
			return "", err
		}
		// The grammar reads the part before "into" or "with" back in
		// straight quotes, so that part must hold none.
		switch {
		case !strings.Contains(value, `"`):
			return "Type " + v + " into " + n, nil
		case !strings.Contains(el.name, `"`):
			return "Fill " + n + " with " + v, nil
		}
		return "", fmt.Errorf("both the field's name and the value hold a double quote: %w", ErrNotExportable)
	case toolSelect:
		n, err := name()
		if err != nil {
			return "", err
		}
		opt := ar.str("value")
		if strings.Contains(opt, `"`) {
			return "", fmt.Errorf("the option %q holds a double quote: %w", oneLine(opt, 40), ErrNotExportable)
		}
		v, err := stepQuote(opt)
		if err != nil {
			return "", err
		}
		return "Select " + v + " from " + n, nil
	case toolCheck:
		n, err := named()
		if err != nil {
			return "", err
		}
		if !ar.boolean("checked", true) {
			return "Uncheck " + n, nil
		}
		return "Check " + n, nil
	case toolPressKey:
		keys := strings.Join(strings.Fields(ar.str("keys")), " ")
		if keys == "" {
			return "", fmt.Errorf("no keys: %w", ErrNotExportable)
		}
		k, err := stepQuote(keys)
		if err != nil {
			return "", err
		}
		return "Press " + k, nil
	case toolNavigate:
		u := ar.str("url")
		if u == "" || strings.ContainsAny(u, " \t\r\n") || strings.ContainsFunc(u, controlRune) {
			return "", fmt.Errorf("the URL %q cannot be written as a step: %w", u, ErrNotExportable)
		}
		if strings.ContainsAny(u[len(u)-1:], ".!,;") {
			// The grammar drops a sentence's final punctuation outside
			// quotes.
			q, err := stepQuote(u)
			if err != nil {
				return "", err
			}
			return "Open " + q, nil
		}
		return "Open " + u, nil
	case toolWait:
		switch secs, _ := ar.num("seconds"); {
		case ar.str("text") != "":
			v, err := stepQuote(ar.str("text"))
			if err != nil {
				return "", err
			}
			return "Wait for " + v, nil
		case aimed(a):
			n, err := name()
			if err != nil {
				return "", err
			}
			return "Wait for " + n, nil
		case secs > 0:
			return "Wait " + strconv.FormatFloat(secs, 'f', -1, 64) + " seconds", nil
		}
		return "", fmt.Errorf("a wait for nothing: %w", ErrNotExportable)
	case toolScroll:
		if aimed(a) {
			n, err := name()
			if err != nil {
				return "", err
			}
			return "Scroll to " + n, nil
		}
		switch d := ar.str("direction"); d {
		case "up", "down":
			return "Scroll " + d, nil
		case "top", "bottom":
			return "Scroll to the " + d, nil
		default:
			return "", fmt.Errorf("scrolling %s has no step: %w", d, ErrNotExportable)
		}
	case toolExtract:
		return "# step " + strconv.Itoa(a.Step) + ": the run read rows of the page here (" + oneLine(ar.str("rows"), 80) + "); a step list does not", nil
	case toolHover, toolBack, toolClickAt, toolTabs:
		return "", fmt.Errorf("%s has no step: %w", a.Tool, ErrNotExportable)
	}
	return "", fmt.Errorf("the custom tool %s has no step: %w", a.Tool, ErrNotExportable)
}

// stepQuotes are the quote pairs of the steps grammar, in order of
// preference.
var stepQuotes = [][2]string{{`"`, `"`}, {"“", "”"}, {"‘", "’"}, {"«", "»"}}

// stepQuote quotes s for a step with the first quote pair s does not
// contain; s on several lines cannot be a step.
func stepQuote(s string) (string, error) {
	if strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("%q spans lines: %w", oneLine(s, 40), ErrNotExportable)
	}
	if strings.ContainsFunc(s, controlRune) {
		// A step list is a text shown in terminals and pages: no escape
		// sequence or reordering of a page's text goes into one.
		return "", fmt.Errorf("%q holds a control character: %w", oneLine(s, 40), ErrNotExportable)
	}
	for _, q := range stepQuotes {
		if !strings.Contains(s, q[1]) {
			return q[0] + s + q[1], nil
		}
	}
	return "", fmt.Errorf("%q holds every kind of quote: %w", oneLine(s, 40), ErrNotExportable)
}

// controlRune reports whether r is a control, line separator or bidi
// control character.
func controlRune(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// commentLines splits s into lines safe in a comment: control characters
// (but the line breaks it is split at) are spaces.
func commentLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		out = append(out, strings.TrimRightFunc(strings.Map(func(r rune) rune {
			if controlRune(r) {
				return ' '
			}
			return r
		}, l), unicode.IsSpace))
	}
	return out
}

// oneLine is s on one line, at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.Join(commentLines(s), " ")), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ExportGoTest renders t as a standalone Go test file: package replay_test,
// one test function named after name ("Replay 1a2b" is TestReplay1a2b),
// importing only the standard library and github.com/go-rod/rod. Put it
// in a directory of its own in a module that requires go-rod.
//
// The test launches Chromium (the -browser flag, else $ROD_BROWSER_BIN,
// else one on PATH; it never downloads one) headless, without background
// networking, without the sandbox when run as root; opens the start URL in
// the recorded viewport; waits for each action's page (its URL pattern)
// and performs the action; and finally checks the final URL pattern. Each
// element is found by the first of these that names exactly one element,
// retried for -step-timeout (10s): a test id attribute (data-testid,
// data-test, data-qa, data-cy), a hand-written id, the name attribute,
// the role and accessible name (the accessibility tree), the visible text,
// the DOM path. Secrets are placeholders in the trace and environment
// variables in the test (SecretEnv); the test skips while one is unset, and
// no value is ever written into the file. An action go-rod cannot replay
// (switching tabs, a custom tool, an element whose fingerprint was not
// recorded) is a t.Fatal line naming the step.
func ExportGoTest(t *Trace, name string) ([]byte, error) {
	// The body first: the secrets its values read are the ones the test
	// asks the environment for (an action that cannot be replayed reads
	// none, and an unused variable would not compile).
	body := &goGen{}
	body.body(t)
	g := &goGen{secrets: body.secrets}
	slices.Sort(g.secrets)
	g.header(t, testName(name))
	if len(g.secrets) > 0 {
		q := make([]string, len(g.secrets))
		for i, env := range g.secrets {
			q[i] = strconv.Quote(env)
		}
		g.printf("secret := secrets(t, %s)\n", strings.Join(q, ", "))
	}
	g.src.WriteString(body.src.String())
	g.src.WriteString("}\n\n")
	g.src.WriteString(goTestHelpers)
	out, err := format.Source([]byte(g.src.String()))
	if err != nil {
		return nil, fmt.Errorf("format the exported test: %w", err)
	}
	return out, nil
}

// testName makes a Go test function name of name.
func testName(name string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(name, func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
	}) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	s := b.String()
	if s == "" {
		s = "Replay"
	}
	if rest, ok := strings.CutPrefix(s, "Test"); ok && (rest == "" || !unicode.IsLower(rune(rest[0]))) {
		return s
	}
	return "Test" + s
}

// goGen writes an exported Go test.
type goGen struct {
	src     strings.Builder
	secrets []string // environment variables of the secrets the values read
}

func (g *goGen) printf(format string, a ...any) {
	fmt.Fprintf(&g.src, format, a...)
}

func (g *goGen) header(t *Trace, fn string) {
	g.printf(`// Package replay_test replays a Wayfinder trace (record and replay) with
// go-rod: it opens the start URL in headless Chromium, performs the
// recorded actions and checks the final URL. Each element is found by the
// first of these that names exactly one element: a test id attribute, a
// hand-written id, the name attribute, the role and accessible name, the
// visible text, the DOM path.
//
`)
	// Quoted as Go strings: a line of the goal must not become a build
	// constraint or a directive, nor hold a character the scanner refuses.
	g.printf("// Goal: %s\n", strconv.Quote(t.Goal))
	g.printf("// Start URL: %s\n", strconv.Quote(t.StartURL))
	g.printf(`//
// Chromium is -browser PATH, else $ROD_BROWSER_BIN, else one on PATH; the
// test never downloads one. Run it in a directory of its own in a module
// that requires github.com/go-rod/rod:
//
//	go test -run '^%s$' . -args -browser /usr/bin/chromium
`, fn)
	if len(g.secrets) > 0 {
		g.printf("//\n// Secrets are read from the environment, never written here; the test\n// skips while one is unset: %s.\n", strings.Join(g.secrets, ", "))
	}
	g.printf(`package replay_test

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/input"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
)

var (
	browserBin  = flag.String("browser", "", "Chromium binary (default $ROD_BROWSER_BIN, else one on PATH)")
	stepTimeout = flag.Duration("step-timeout", 10*time.Second, "how long a step waits for its page and element")
)

// %s replays the trace.
func %s(t *testing.T) {
`, fn, fn)
}

func (g *goGen) body(t *Trace) {
	w, h := viewport(t)
	g.printf("page := start(t, %s, %d, %d)\n", strconv.Quote(t.StartURL), w, h)
	at := URLPattern(t.StartURL)
	for _, a := range t.Actions {
		g.printf("\n")
		if p := actionPattern(a); p != "" && p != at && httpPattern(p) {
			g.printf("onPage(t, page, %d, %s)\n", a.Step, strconv.Quote(patternRegexp(p)))
			at = p
		}
		g.action(a)
		if a.Tool == toolNavigate {
			at = URLPattern(args(a.Arguments).str("url"))
		} else if a.URLAfter != "" {
			at = URLPattern(a.URLAfter)
		}
	}
	if p := finalPattern(t); p != "" {
		g.printf("\nonPage(t, page, 0, %s)\n", strconv.Quote(patternRegexp(p)))
	}
}

func httpPattern(p string) bool {
	return strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://")
}

// viewport is the viewport the trace was recorded in (its fingerprints'),
// else the API's default.
func viewport(t *Trace) (int, int) {
	for _, a := range t.Actions {
		if fp := a.Target; fp != nil && fp.Viewport.Width >= 1 && fp.Viewport.Height >= 1 {
			return int(fp.Viewport.Width), int(fp.Viewport.Height)
		}
	}
	return 1280, 800
}

// patternRegexp is the regular expression of a URL pattern: case
// insensitive, anchored, "*" one path segment.
func patternRegexp(p string) string {
	return "(?i)^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, `[^/]+`) + "$"
}

// action writes one action's call.
func (g *goGen) action(a Action) {
	ar := args(a.Arguments)
	g.printf("// Step %d: %s\n", a.Step, describe(a))
	step := a.Step
	unsupported := func(why string) {
		msg := strconv.Quote(fmt.Sprintf("unsupported: step %d (%s) %s", step, a.Tool, why))
		if strings.Contains(msg, "%") {
			// go vet (run by go test) takes a % in t.Fatal's text for a
			// misplaced formatting directive.
			g.printf("t.Fatalf(\"%%s\", %s)\n", msg)
			return
		}
		g.printf("t.Fatal(%s)\n", msg)
	}
	target := func() (string, bool) {
		el, ok := elementOf(a)
		if !ok {
			why := "was aimed at an element that was not recorded"
			if a.TargetError != "" {
				why += ": " + oneLine(a.TargetError, 200)
			}
			unsupported(why)
			return "", false
		}
		return el.literal(), true
	}
	switch a.Tool {
	case toolClick:
		if tg, ok := target(); ok {
			count := 1
			if ar.boolean("double", false) {
				count = 2
			}
			g.printf("click(t, page, %d, %s, %d)\n", step, tg, count)
		}
	case toolFill:
		if tg, ok := target(); ok {
			g.printf("fill(t, page, %d, %s, %s, %t)\n", step, tg, g.value(ar.str("value")), ar.boolean("clear_first", true))
		}
	case toolType:
		if !aimed(a) {
			g.printf("typeText(t, page, %d, nil, %s)\n", step, g.value(ar.str("text")))
		} else if tg, ok := target(); ok {
			g.printf("typeText(t, page, %d, &%s, %s)\n", step, tg, g.value(ar.str("text")))
		}
	case toolSelect:
		if tg, ok := target(); ok {
			g.printf("selectOption(t, page, %d, %s, %s)\n", step, tg, g.value(ar.str("value")))
		}
	case toolCheck:
		if tg, ok := target(); ok {
			g.printf("check(t, page, %d, %s, %t)\n", step, tg, ar.boolean("checked", true))
		}
	case toolHover:
		if tg, ok := target(); ok {
			g.printf("hover(t, page, %d, %s)\n", step, tg)
		}
	case toolScroll:
		if aimed(a) {
			if tg, ok := target(); ok {
				g.printf("scrollTo(t, page, %d, %s)\n", step, tg)
			}
			return
		}
		amount, _ := ar.num("amount")
		g.printf("scrollPage(t, page, %d, %s, %d)\n", step, strconv.Quote(ar.str("direction")), int(amount))
	case toolPressKey:
		chords, err := rodChords(ar.str("keys"))
		if err != nil {
			unsupported(err.Error())
			return
		}
		tg := "nil"
		if aimed(a) {
			lit, ok := target()
			if !ok {
				return
			}
			tg = "&" + lit
		}
		g.printf("press(t, page, %d, %s, %s)\n", step, tg, strings.Join(chords, ", "))
	case toolNavigate:
		g.printf("navigate(t, page, %d, %s)\n", step, strconv.Quote(ar.str("url")))
	case toolBack:
		g.printf("back(t, page, %d)\n", step)
	case toolWait:
		secs, _ := ar.num("seconds")
		timeout, _ := ar.num("timeout_ms")
		// The runner allows waits up to 30s (its arithmetic can wrap
		// past that check); more would overflow a time.Duration constant.
		const maxWaitMS = 30_000
		timeout = max(0, min(timeout, maxWaitMS))
		secs = min(secs, maxWaitMS/1000)
		switch {
		case ar.str("text") != "":
			g.printf("waitText(t, page, %d, %s, %d*time.Millisecond)\n", step, strconv.Quote(ar.str("text")), int64(timeout))
		case aimed(a):
			if tg, ok := target(); ok {
				g.printf("waitVisible(t, page, %d, %s)\n", step, tg)
			}
		case secs > 0:
			g.printf("time.Sleep(%d * time.Millisecond)\n", int64(secs*1000))
		default:
			unsupported("waits for nothing")
		}
	case toolClickAt:
		x, okX := ar.num("x")
		y, okY := ar.num("y")
		if !okX || !okY {
			unsupported("has no coordinates")
			return
		}
		g.printf("clickAt(t, page, %d, %s, %s)\n", step, strconv.FormatFloat(x, 'f', -1, 64), strconv.FormatFloat(y, 'f', -1, 64))
	case toolExtract:
		g.printf("extract(t, page, %d, %s)\n", step, strconv.Quote(ar.str("rows")))
	case toolTabs:
		unsupported("switches or closes a tab, which is named by the recording session only")
	default:
		unsupported("is a custom tool of the run")
	}
}

// value is the Go expression of a fill or type value: its text, with each
// secret placeholder read from the secrets map.
func (g *goGen) value(s string) string {
	locs := placeholderPattern.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		return strconv.Quote(s)
	}
	var parts []string
	last := 0
	for _, l := range locs {
		if l[0] > last {
			parts = append(parts, strconv.Quote(s[last:l[0]]))
		}
		env := SecretEnv(strings.ToLower(s[l[2]:l[3]]))
		if !slices.Contains(g.secrets, env) {
			g.secrets = append(g.secrets, env)
		}
		parts = append(parts, "secret["+strconv.Quote(env)+"]")
		last = l[1]
	}
	if last < len(s) {
		parts = append(parts, strconv.Quote(s[last:]))
	}
	return strings.Join(parts, " + ")
}

// describe is a one-line account of action a for a comment. Its parts
// come from the trace (a model's description of the element among them):
// each is a plain word or a quoted Go string.
func describe(a Action) string {
	s := commentWord(a.Tool)
	if el, ok := elementOf(a); ok {
		if el.role != "" {
			s += " " + commentWord(el.role)
		}
		if el.name != "" {
			s += " " + strconv.Quote(el.name)
		} else if el.css != "" {
			s += " " + strconv.Quote(el.css)
		}
	}
	return oneLine(s, 160)
}

// plainWord matches a tool or role name that goes into a comment as is.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// commentWord is s as is when it is a plain word, else quoted.
func commentWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// literal is the Go composite literal of the exported test's target type.
func (el exportElement) literal() string {
	var sels []string
	role, name, tag, text, path := el.role, el.name, "", el.text, ""
	if el.css != "" {
		sels = append(sels, el.css)
	}
	if fp := el.fp; fp != nil {
		for _, a := range testIDAttrs {
			if v := fp.Attrs[a]; v != "" {
				sels = append(sels, "["+a+"="+cssString(v)+"]")
			}
		}
		if id := fp.Attrs["id"]; id != "" && !generatedID(id) {
			sels = append(sels, "[id="+cssString(id)+"]")
		}
		if n := fp.Attrs["name"]; n != "" {
			sels = append(sels, fp.Tag+"[name="+cssString(n)+"]")
		}
		tag, path = fp.Tag, fp.Path
	}
	var fields []string
	if len(sels) > 0 {
		q := make([]string, len(sels))
		for i, s := range sels {
			q[i] = strconv.Quote(s)
		}
		fields = append(fields, "selectors: []string{"+strings.Join(q, ", ")+"}")
	}
	for _, f := range []struct{ k, v string }{{"role", role}, {"name", name}, {"tag", tag}, {"text", text}, {"path", path}} {
		if f.v != "" {
			fields = append(fields, f.k+": "+strconv.Quote(f.v))
		}
	}
	return "target{" + strings.Join(fields, ", ") + "}"
}

// cssString quotes s as a CSS string.
func cssString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\%x ", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// rodNamedKeys are go-rod's names (package input) of the keys the engine
// presses by name, lower case, aliases included (as internal/browser).
var rodNamedKeys = map[string]string{
	"enter": "Enter", "return": "Enter", "tab": "Tab", "backspace": "Backspace", "delete": "Delete", "del": "Delete",
	"escape": "Escape", "esc": "Escape", "space": "Space", " ": "Space", "arrowup": "ArrowUp", "up": "ArrowUp",
	"arrowdown": "ArrowDown", "down": "ArrowDown", "arrowleft": "ArrowLeft", "left": "ArrowLeft",
	"arrowright": "ArrowRight", "right": "ArrowRight", "home": "Home", "end": "End", "pageup": "PageUp",
	"pagedown": "PageDown", "insert": "Insert", "capslock": "CapsLock", "contextmenu": "ContextMenu",
	"shift": "ShiftLeft", "control": "ControlLeft", "ctrl": "ControlLeft", "controlormeta": "ControlLeft",
	"alt": "AltLeft", "option": "AltLeft", "meta": "MetaLeft", "cmd": "MetaLeft", "command": "MetaLeft", "super": "MetaLeft",
	"f1": "F1", "f2": "F2", "f3": "F3", "f4": "F4", "f5": "F5", "f6": "F6", "f7": "F7", "f8": "F8", "f9": "F9",
	"f10": "F10", "f11": "F11", "f12": "F12",
}

// rodModifiers are the named keys that may hold a chord.
var rodModifiers = map[string]bool{"ShiftLeft": true, "ControlLeft": true, "AltLeft": true, "MetaLeft": true}

// rodChords converts the engine's key syntax (browser.KeyChords) to go-rod key slices, modifiers
// first: []input.Key{input.ControlLeft, 'a'}.
func rodChords(keys string) ([]string, error) {
	var out []string
	for _, parts := range browser.KeyChords(keys) {
		var ks []string
		for i, p := range parts {
			k, ok := rodKey(p)
			if !ok {
				return nil, fmt.Errorf("presses the key %q, which go-rod's US keyboard has not", p)
			}
			if i < len(parts)-1 && !rodModifiers[strings.TrimPrefix(k, "input.")] {
				return nil, fmt.Errorf("holds %q, which is no modifier", p)
			}
			ks = append(ks, k)
		}
		out = append(out, "[]input.Key{"+strings.Join(ks, ", ")+"}")
	}
	if len(out) == 0 {
		return nil, errors.New("presses no key")
	}
	return out, nil
}

// rodKey is the Go expression of one key: input.Enter, or a character
// literal of a printable ASCII character ('a', 'A', '!').
func rodKey(name string) (string, bool) {
	if len(name) == 1 && name[0] > ' ' && name[0] < 0x7f {
		return strconv.QuoteRune(rune(name[0])), true
	}
	if k, ok := rodNamedKeys[strings.ToLower(name)]; ok {
		return "input." + k, true
	}
	return "", false
}

// goTestHelpers are the exported test's helpers, the same in every file.
const goTestHelpers = `// target is how a step finds its element: by the first of these that
// names exactly one element.
type target struct {
	selectors []string // CSS: the test ids, id and name attribute
	role      string   // role and accessible name, in the accessibility tree
	name      string
	tag       string // tag and visible text
	text      string
	path      string // DOM path below body; " >> " enters a shadow root
}

func (tg target) String() string {
	if tg.name != "" {
		return tg.role + " " + strconvQuote(tg.name)
	}
	if len(tg.selectors) > 0 {
		return tg.selectors[0]
	}
	return tg.tag + " " + strconvQuote(tg.text) + " " + tg.path
}

func strconvQuote(s string) string { return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\"" }

// secrets reads the secrets' environment variables; the test skips while
// one is unset.
func secrets(t *testing.T, envs ...string) map[string]string {
	t.Helper()
	out := make(map[string]string, len(envs))
	for _, env := range envs {
		v := os.Getenv(env)
		if v == "" {
			t.Skipf("set %s to the secret this test types", env)
		}
		out[env] = v
	}
	return out
}

// start launches Chromium and opens url in a page of width × height.
func start(t *testing.T, url string, width, height int) *rod.Page {
	t.Helper()
	bin := *browserBin
	if bin == "" {
		bin = os.Getenv("ROD_BROWSER_BIN")
	}
	if bin == "" {
		found, ok := launcher.LookPath()
		if !ok {
			t.Fatal("no Chromium found: pass -browser PATH or set ROD_BROWSER_BIN (this test never downloads one)")
		}
		bin = found
	}
	l := launcher.New().Bin(bin).Headless(true).Leakless(false).
		Set("disable-background-networking").Set("disable-component-update").Set("no-first-run").Set("mute-audio")
	if os.Geteuid() == 0 {
		l = l.NoSandbox(true)
	}
	u, err := l.Launch()
	if err != nil {
		t.Fatalf("launch %s: %v", bin, err)
	}
	browser := rod.New().ControlURL(u)
	if err := browser.Connect(); err != nil {
		l.Kill()
		l.Cleanup()
		t.Fatalf("connect to Chromium: %v", err)
	}
	t.Cleanup(func() {
		if err := browser.Close(); err != nil {
			l.Kill()
		}
		l.Cleanup()
	})
	page, err := browser.Page(proto.TargetCreateTarget{})
	if err != nil {
		t.Fatalf("open a page: %v", err)
	}
	if err := page.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: width, Height: height, DeviceScaleFactor: 1}); err != nil {
		t.Fatalf("set the viewport: %v", err)
	}
	if err := page.Timeout(*stepTimeout).Navigate(url); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	if err := page.Timeout(*stepTimeout).WaitLoad(); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	return page
}

// until retries ok every 100ms for the step timeout.
func until(ok func() bool) bool {
	deadline := time.Now().Add(*stepTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// currentURL is the page's URL, "" when it cannot be read.
func currentURL(page *rod.Page) string {
	info, err := page.Info()
	if err != nil {
		return ""
	}
	return info.URL
}

// onPage waits until the page's URL, without query and fragment, matches
// pattern: the page a step expects (step 0: the final page).
func onPage(t *testing.T, page *rod.Page, step int, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	bare := func(u string) string {
		if i := strings.IndexAny(u, "?#"); i >= 0 {
			return u[:i]
		}
		return u
	}
	if !until(func() bool { return re.MatchString(bare(currentURL(page))) }) {
		if step == 0 {
			t.Fatalf("the final page %s does not match %s", currentURL(page), pattern)
		}
		t.Fatalf("step %d: the page %s does not match %s", step, currentURL(page), pattern)
	}
	_ = page.Timeout(*stepTimeout).WaitLoad()
}

// locate finds tg's element, waiting for it for the step timeout.
func locate(t *testing.T, page *rod.Page, step int, tg target) *rod.Element {
	t.Helper()
	var el *rod.Element
	if !until(func() bool { el = find(page, tg); return el != nil }) {
		t.Fatalf("step %d: no single element is %s on %s", step, tg, currentURL(page))
	}
	return el.Timeout(*stepTimeout)
}

func find(page *rod.Page, tg target) *rod.Element {
	for _, sel := range tg.selectors {
		if el := single(page.Elements(sel)); el != nil {
			return el
		}
	}
	if tg.name != "" {
		if el := byRole(page, tg.role, tg.name); el != nil {
			return el
		}
	}
	if tg.text != "" {
		sel := tg.tag
		if sel == "" {
			sel = "*"
		}
		if el := single(page.ElementsByJS(rod.Eval(byTextJS, sel, tg.text))); el != nil {
			return el
		}
	}
	if tg.path != "" {
		return byPath(page, tg.path)
	}
	return nil
}

func single(els rod.Elements, err error) *rod.Element {
	if err != nil || len(els) != 1 {
		return nil
	}
	return els[0]
}

// byTextJS lists the innermost elements matching a selector whose visible
// text is the text.
const byTextJS = ` + "`" + `(sel, text) => {
	const norm = s => (s || "").replace(/\s+/g, " ").trim();
	const all = [...document.querySelectorAll(sel)].filter(e => norm(e.innerText) === text);
	return all.filter(e => !all.some(o => o !== e && e.contains(o)));
}` + "`" + `

// byRole finds the one element of the role (any when "") and accessible
// name in the accessibility tree.
func byRole(page *rod.Page, role, name string) *rod.Element {
	doc, err := page.Evaluate(rod.Eval(` + "`() => document`" + `).ByObject())
	if err != nil {
		return nil
	}
	defer func() { _ = page.Release(doc) }()
	res, err := proto.AccessibilityQueryAXTree{ObjectID: doc.ObjectID, Role: role, AccessibleName: name}.Call(page)
	if err != nil {
		return nil
	}
	var ids []proto.DOMBackendNodeID
	for _, n := range res.Nodes {
		if n.Ignored || n.BackendDOMNodeID == 0 {
			continue
		}
		if r := n.Role; role == "" && r != nil && (r.Value.Str() == "StaticText" || r.Value.Str() == "InlineTextBox") {
			continue
		}
		ids = append(ids, n.BackendDOMNodeID)
	}
	if len(ids) != 1 {
		return nil
	}
	el, err := page.ElementFromNode(&proto.DOMNode{BackendNodeID: ids[0]})
	if err != nil {
		return nil
	}
	return el
}

// byPath finds the element at a DOM path below body; " >> " steps into
// the shadow root of the element before it.
func byPath(page *rod.Page, path string) *rod.Element {
	parts := strings.Split(path, " >> ")
	el := single(page.Elements("body > " + parts[0]))
	for _, p := range parts[1:] {
		if el == nil {
			return nil
		}
		root, err := el.ShadowRoot()
		if err != nil {
			return nil
		}
		el = single(root.Elements(p))
	}
	return el
}

func click(t *testing.T, page *rod.Page, step int, tg target, count int) {
	t.Helper()
	if err := locate(t, page, step, tg).Click(proto.InputMouseButtonLeft, count); err != nil {
		t.Fatalf("step %d: click %s: %v", step, tg, err)
	}
}

// fill puts value into tg's field, replacing its content when clear.
func fill(t *testing.T, page *rod.Page, step int, tg target, value string, clear bool) {
	t.Helper()
	el := locate(t, page, step, tg)
	if !clear {
		typeInto(t, page, step, el, value)
		return
	}
	if err := el.SelectAllText(); err != nil {
		if err := el.Focus(); err != nil {
			t.Fatalf("step %d: focus %s: %v", step, tg, err)
		}
		if _, err := el.Eval(selectContentsJS); err != nil {
			t.Fatalf("step %d: select the content of %s: %v", step, tg, err)
		}
	}
	if value == "" {
		if err := page.Keyboard.Type(input.Backspace); err != nil {
			t.Fatalf("step %d: clear %s: %v", step, tg, err)
		}
		return
	}
	if err := el.Input(value); err != nil {
		t.Fatalf("step %d: fill %s: %v", step, tg, err)
	}
}

const selectContentsJS = ` + "`" + `() => {
	const r = document.createRange();
	r.selectNodeContents(this);
	const s = getSelection();
	s.removeAllRanges();
	s.addRange(r);
}` + "`" + `

// typeText types text key by key into tg's field, or the focused one when
// tg is nil, keeping its content.
func typeText(t *testing.T, page *rod.Page, step int, tg *target, text string) {
	t.Helper()
	if tg == nil {
		typeKeys(t, page, step, text)
		return
	}
	typeInto(t, page, step, locate(t, page, step, *tg), text)
}

func typeInto(t *testing.T, page *rod.Page, step int, el *rod.Element, text string) {
	t.Helper()
	if err := el.Focus(); err != nil {
		t.Fatalf("step %d: focus: %v", step, err)
	}
	_, _ = el.Eval(` + "`" + `() => { try { const n = this.value.length; this.setSelectionRange(n, n) } catch (e) {} }` + "`" + `)
	typeKeys(t, page, step, text)
}

// typeKeys types printable ASCII key by key and inserts anything else.
func typeKeys(t *testing.T, page *rod.Page, step int, text string) {
	t.Helper()
	for _, r := range text {
		var err error
		switch {
		case r == '\n':
			err = page.Keyboard.Type(input.Enter)
		case r >= ' ' && r < 0x7f:
			err = page.Keyboard.Type(input.Key(r))
		default:
			err = page.InsertText(string(r))
		}
		if err != nil {
			t.Fatalf("step %d: type: %v", step, err)
		}
	}
}

// selectOption selects the option of tg's select whose value, else text,
// is value.
func selectOption(t *testing.T, page *rod.Page, step int, tg target, value string) {
	t.Helper()
	el := locate(t, page, step, tg)
	res, err := el.Eval(` + "`" + `(v) => {
		if (this.tagName !== "SELECT") return "not a select element";
		const norm = s => s.replace(/\s+/g, " ").trim().toLowerCase();
		const opts = [...this.options];
		const o = opts.find(o => o.value === v) || opts.find(o => norm(o.text) === norm(v));
		if (!o) return "no option " + JSON.stringify(v);
		this.focus();
		o.selected = true;
		this.dispatchEvent(new Event("input", {bubbles: true}));
		this.dispatchEvent(new Event("change", {bubbles: true}));
		return "";
	}` + "`" + `, value)
	if err != nil {
		t.Fatalf("step %d: select in %s: %v", step, tg, err)
	}
	if msg := res.Value.Str(); msg != "" {
		t.Fatalf("step %d: select in %s: %s", step, tg, msg)
	}
}

// check sets tg's checkbox, radio button or switch to on.
func check(t *testing.T, page *rod.Page, step int, tg target, on bool) {
	t.Helper()
	el := locate(t, page, step, tg)
	state := func() bool {
		res, err := el.Eval(` + "`" + `() => "checked" in this && this.matches("input") ? this.checked : this.getAttribute("aria-checked") === "true"` + "`" + `)
		if err != nil {
			t.Fatalf("step %d: read %s: %v", step, tg, err)
		}
		return res.Value.Bool()
	}
	if state() == on {
		return
	}
	if err := el.Click(proto.InputMouseButtonLeft, 1); err != nil {
		t.Fatalf("step %d: click %s: %v", step, tg, err)
	}
	if state() != on {
		t.Fatalf("step %d: %s did not change", step, tg)
	}
}

func hover(t *testing.T, page *rod.Page, step int, tg target) {
	t.Helper()
	if err := locate(t, page, step, tg).Hover(); err != nil {
		t.Fatalf("step %d: hover %s: %v", step, tg, err)
	}
}

func scrollTo(t *testing.T, page *rod.Page, step int, tg target) {
	t.Helper()
	if err := locate(t, page, step, tg).ScrollIntoView(); err != nil {
		t.Fatalf("step %d: scroll to %s: %v", step, tg, err)
	}
}

// scrollPage scrolls the page: up, down, left, right by amount pixels
// (default 300), or to the top or bottom.
func scrollPage(t *testing.T, page *rod.Page, step int, direction string, amount int) {
	t.Helper()
	if amount <= 0 {
		amount = 300
	}
	_, err := page.Eval(` + "`" + `(d, n) => {
		const m = {up: [0, -n], down: [0, n], left: [-n, 0], right: [n, 0]};
		if (d === "top") window.scrollTo(window.scrollX, 0);
		else if (d === "bottom") window.scrollTo(window.scrollX, document.documentElement.scrollHeight);
		else if (m[d]) window.scrollBy(m[d][0], m[d][1]);
		else throw new Error("unknown direction " + d);
	}` + "`" + `, direction, amount)
	if err != nil {
		t.Fatalf("step %d: scroll %s: %v", step, direction, err)
	}
}

// press presses chords of keys (modifiers held, then the last key),
// on tg's element when given.
func press(t *testing.T, page *rod.Page, step int, tg *target, chords ...[]input.Key) {
	t.Helper()
	if tg != nil {
		if err := locate(t, page, step, *tg).Focus(); err != nil {
			t.Fatalf("step %d: focus %s: %v", step, tg, err)
		}
	}
	for _, c := range chords {
		if err := page.KeyActions().Press(c[:len(c)-1]...).Type(c[len(c)-1]).Do(); err != nil {
			t.Fatalf("step %d: press: %v", step, err)
		}
	}
}

func navigate(t *testing.T, page *rod.Page, step int, url string) {
	t.Helper()
	if err := page.Timeout(*stepTimeout).Navigate(url); err != nil {
		t.Fatalf("step %d: open %s: %v", step, url, err)
	}
	if err := page.Timeout(*stepTimeout).WaitLoad(); err != nil {
		t.Fatalf("step %d: load %s: %v", step, url, err)
	}
}

func back(t *testing.T, page *rod.Page, step int) {
	t.Helper()
	before := currentURL(page)
	if err := page.NavigateBack(); err != nil {
		t.Fatalf("step %d: go back: %v", step, err)
	}
	if !until(func() bool { return currentURL(page) != before }) {
		t.Fatalf("step %d: going back left the page at %s", step, before)
	}
}

// waitText waits for text to be on the page: timeout, else the step
// timeout.
func waitText(t *testing.T, page *rod.Page, step int, text string, timeout time.Duration) {
	t.Helper()
	if timeout <= 0 {
		timeout = *stepTimeout
	}
	deadline := time.Now().Add(timeout)
	for {
		res, err := page.Eval(` + "`" + `(s) => !!document.body && document.body.innerText.includes(s)` + "`" + `, text)
		if err == nil && res.Value.Bool() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("step %d: %s is not on the page", step, strconvQuote(text))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitVisible(t *testing.T, page *rod.Page, step int, tg target) {
	t.Helper()
	if err := locate(t, page, step, tg).WaitVisible(); err != nil {
		t.Fatalf("step %d: %s is not visible: %v", step, tg, err)
	}
}

// clickAt clicks at viewport coordinates.
func clickAt(t *testing.T, page *rod.Page, step int, x, y float64) {
	t.Helper()
	if err := page.Mouse.MoveTo(proto.Point{X: x, Y: y}); err != nil {
		t.Fatalf("step %d: move the mouse: %v", step, err)
	}
	if err := page.Mouse.Click(proto.InputMouseButtonLeft, 1); err != nil {
		t.Fatalf("step %d: click at %v,%v: %v", step, x, y, err)
	}
}

// extract checks that the rows the run read are on the page.
func extract(t *testing.T, page *rod.Page, step int, rows string) {
	t.Helper()
	if !until(func() bool { els, err := page.Elements(rows); return err == nil && len(els) > 0 }) {
		t.Fatalf("step %d: no rows %s on the page", step, rows)
	}
}
`
