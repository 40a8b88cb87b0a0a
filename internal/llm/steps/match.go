package steps

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// threshold is the least match an element needs to be a step's target.
const threshold = 0.5

// candidate is an element scored against a step's target.
type candidate struct {
	el llm.ObservedElement
	// key identifies the element across snapshots (refs may shift).
	key string
	// match is how well its name, label, context or hint matches, 0..1
	// plus a context bonus.
	match float64
	// score is match adjusted for role fit and state; it ranks.
	score float64
}

// kindRoles are the roles that suit each kind of step.
var kindRoles = map[StepKind][]string{
	Click:   {"button", "link", "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "checkbox", "radio", "switch", "option", "treeitem", "clickable"},
	Fill:    {"textbox", "searchbox", "combobox", "spinbutton"},
	Select:  {"combobox", "listbox"},
	Check:   {"checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"},
	Uncheck: {"checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"},
}

// hintRoles are the roles that fit a role named in the wording.
var hintRoles = map[string][]string{
	"textbox":  {"textbox", "searchbox", "combobox", "spinbutton"},
	"combobox": {"combobox", "listbox"},
	"checkbox": {"checkbox", "menuitemcheckbox", "switch"},
	"switch":   {"switch", "checkbox"},
	"radio":    {"radio", "menuitemradio"},
	"menuitem": {"menuitem", "menuitemcheckbox", "menuitemradio"},
}

// rank scores the elements against st's target and returns those that
// match well enough, best first (document order among equals), and the
// closest ones, eligible or not, for an error message.
func rank(st Step, els []llm.ObservedElement) (eligible, closest []candidate) {
	seen := map[string]int{}
	all := make([]candidate, 0, len(els))
	for _, el := range els {
		id := el.Role + "\x00" + el.Name + "\x00" + el.Context + "\x00" + el.Hint
		seen[id]++
		c := scoreElement(st, el)
		c.key = fmt.Sprintf("%s\x00%d", id, seen[id])
		all = append(all, c)
	}
	slices.SortStableFunc(all, func(a, b candidate) int { return cmpDesc(a.score, b.score) })
	for _, c := range all {
		if c.match >= threshold {
			eligible = append(eligible, c)
		}
	}
	closest = slices.Clone(all)
	slices.SortStableFunc(closest, func(a, b candidate) int { return cmpDesc(a.match, b.match) })
	n := 0
	for n < len(closest) && n < 3 && closest[n].match > 0 {
		n++
	}
	return eligible, closest[:n]
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// scoreElement scores one element for st.
func scoreElement(st Step, el llm.ObservedElement) candidate {
	c := candidate{el: el}
	targets := []string{st.Target}
	if st.phrase != "" && !strings.EqualFold(st.phrase, st.Target) {
		targets = append(targets, st.phrase)
	}
	for _, t := range targets {
		m := max(nameScore(t, el.Name), 0.85*nameScore(t, el.Context), 0.8*nameScore(t, hintWords(el.Hint)))
		c.match = max(c.match, m+contextBonus(t, el))
	}
	c.score = c.match
	if roles := kindRoles[st.Kind]; roles != nil {
		switch {
		case slices.Contains(roles, el.Role):
			c.score += 0.05
		case st.Kind != Click:
			c.score -= 0.3 // filling a button or checking a link fails
		}
	}
	if st.Role != "" && (el.Role == st.Role || slices.Contains(hintRoles[st.Role], el.Role)) {
		c.score += 0.1
	}
	if st.Kind == Select && optionIndex(st.Value, el.Options) >= 0 {
		c.score += 0.1
	}
	for _, s := range el.State {
		switch {
		case s == "disabled":
			c.score -= 0.5
		case s == "readonly" && st.Kind == Fill:
			c.score -= 0.2
		case s == "covered":
			c.score -= 0.05
		}
	}
	return c
}

// nameScore says how well target matches name, 0..1: 1 for an equal name
// (case and spacing aside), 0.95 for equal letters and digits ("Log in",
// "Login"), about 0.7-0.85 for a whole-word prefix, 0.6-0.75 for whole
// words contained, then up to 0.7 for shared words and close spellings.
func nameScore(target, name string) float64 {
	a, b := normalize(target), normalize(trimLabel(name))
	if a == "" || b == "" {
		return 0
	}
	if a == b {
		return 1
	}
	sa, sb := squash(a), squash(b)
	if sa != "" && sa == sb {
		return 0.95
	}
	short, long := a, b
	if len(short) > len(long) {
		short, long = long, short
	}
	ratio := float64(len([]rune(short))) / float64(len([]rune(long)))
	var s float64
	switch {
	case strings.HasPrefix(long, short) && wordEnd(long, len(short)):
		s = 0.7 + 0.15*ratio
	case containsWord(long, short):
		s = 0.6 + 0.15*ratio
	}
	s = max(s, 0.7*dice(tokens(a), tokens(b)))
	if sa != "" && sb != "" {
		d := levenshtein([]rune(sa), []rune(sb))
		if sim := 1 - float64(d)/float64(max(len([]rune(sa)), len([]rune(sb)))); sim >= 0.8 {
			s = max(s, 0.7*sim)
		}
	}
	return s
}

// stopwords carry no meaning when a target's extra words are looked up in
// an element's context.
var stopwords = map[string]bool{
	"the": true, "a": true, "an": true, "for": true, "in": true, "of": true, "on": true, "to": true,
	"next": true, "near": true, "row": true, "at": true, "by": true, "under": true, "beside": true,
	"with": true, "from": true, "item": true, "section": true,
}

// contextBonus rewards an element whose context or hint holds the target's
// words its name lacks ("Remove next to Red mug" for a Remove button in
// the Red mug row), up to 0.2.
func contextBonus(target string, el llm.ObservedElement) float64 {
	have := map[string]bool{}
	for _, t := range tokens(el.Name) {
		have[t] = true
	}
	var extra []string
	words := 0
	for _, t := range tokens(target) {
		if stopwords[t] {
			continue
		}
		words++
		if !have[t] {
			extra = append(extra, t)
		}
	}
	if len(extra) == 0 || len(extra) == words {
		return 0 // nothing left over, or the name matched none of it
	}
	ctx := map[string]bool{}
	for _, t := range tokens(el.Context + " " + hintWords(el.Hint)) {
		ctx[t] = true
	}
	found := 0
	for _, t := range extra {
		if ctx[t] {
			found++
		}
	}
	return 0.2 * float64(found) / float64(len(extra))
}

// optionIndex finds want among a select's options (equal, then a close
// match); -1 when none is close.
func optionIndex(want string, options []string) int {
	best, bestScore := -1, 0.0
	for i, o := range options {
		if s := nameScore(want, o); s > bestScore {
			best, bestScore = i, s
		}
	}
	if bestScore < 0.7 {
		return -1
	}
	return best
}

// normalize lower-cases s and collapses its white space.
func normalize(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// trimLabel drops what forms add to a label: a trailing colon, a required
// marker.
func trimLabel(s string) string {
	s = strings.TrimSpace(s)
	for {
		t := strings.TrimSpace(strings.TrimRight(s, ":*"))
		for _, suf := range []string{"(required)", "(optional)"} {
			if len(t) >= len(suf) && strings.EqualFold(t[len(t)-len(suf):], suf) {
				t = strings.TrimSpace(t[:len(t)-len(suf)])
			}
		}
		if t == s || t == "" {
			return s
		}
		s = t
	}
}

// squash keeps the letters and digits of s.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, s)
}

// tokens are the lower-case words of s.
func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// hintWords spells an id or class as words: "loginBtn" → "login btn".
func hintWords(h string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range h {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			r = ' '
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// wordEnd reports whether position i of s ends a word.
func wordEnd(s string, i int) bool {
	return i >= len(s) || !isAlnumByte(s[i])
}

// containsWord reports whether short occurs in long on word boundaries.
func containsWord(long, short string) bool {
	for i := 0; i+len(short) <= len(long); {
		j := strings.Index(long[i:], short)
		if j < 0 {
			return false
		}
		j += i
		if (j == 0 || !isAlnumByte(long[j-1])) && wordEnd(long, j+len(short)) {
			return true
		}
		i = j + 1
	}
	return false
}

func isAlnumByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b >= 0x80
}

// dice is the Dice coefficient of two word lists, where words of four
// letters or more may differ by one edit (two from seven letters).
func dice(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	used := make([]bool, len(b))
	m := 0
	for _, x := range a {
		for j, y := range b {
			if !used[j] && similarWord(x, y) {
				used[j] = true
				m++
				break
			}
		}
	}
	return 2 * float64(m) / float64(len(a)+len(b))
}

func similarWord(x, y string) bool {
	if x == y {
		return true
	}
	rx, ry := []rune(x), []rune(y)
	n := min(len(rx), len(ry))
	switch {
	case n >= 7:
		return levenshtein(rx, ry) <= 2
	case n >= 4:
		return levenshtein(rx, ry) <= 1
	}
	return false
}

// levenshtein is the edit distance of a and b.
func levenshtein(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// describe names an element for messages: @e4 button "Sign in".
func describe(el llm.ObservedElement) string {
	name := el.Name
	if name == "" {
		name = el.Hint
	}
	return fmt.Sprintf("%s %s %q", el.Ref, el.Role, truncate(name, 60))
}

// truncate shortens s to n runes with an ellipsis.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
