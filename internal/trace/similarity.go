package trace

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// normalize lower-cases s and collapses its whitespace.
func normalize(s string) string {
	if n, ok := normalizeASCII(s); ok {
		return n
	}
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// normalizeASCII is normalize for an ASCII s, with at most one
// allocation (none when s is already normalised); ok is false when s is
// not ASCII.
func normalizeASCII(s string) (string, bool) {
	clean := true // s is already lower case with single inner spaces
	prevSpace := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			return "", false
		case asciiSpace(c):
			if c != ' ' || prevSpace {
				clean = false
			}
			prevSpace = true
		default:
			if 'A' <= c && c <= 'Z' {
				clean = false
			}
			prevSpace = false
		}
	}
	if clean && (s == "" || s[len(s)-1] != ' ') {
		return s, true
	}
	b := make([]byte, 0, len(s))
	pending := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if asciiSpace(c) {
			pending = len(b) > 0
			continue
		}
		if pending {
			b = append(b, ' ')
			pending = false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b), true
}

// asciiSpace is unicode.IsSpace for an ASCII byte.
func asciiSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}

// wordRune says whether r belongs to a word (letters and digits).
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// maxEditRunes is how many runes of a text editRatio looks at, which
// bounds its cost.
const maxEditRunes = 64

// text is a normalised text with what comparing it needs, prepared once
// and compared with many others.
type text struct {
	s string
	// toks are the words of s (letters and digits), sorted.
	toks []string
	// runes are the first maxEditRunes runes of s.
	runes []rune
}

// textArena prepares texts, keeping their words and runes in shared
// backing arrays so that preparing many costs few allocations. It lives
// for one Match or Shortlist call.
type textArena struct {
	toks  []string
	runes []rune
}

// prepare normalises raw and splits it into words and runes.
func (ar *textArena) prepare(raw string) text {
	s := normalize(raw)
	t := text{s: s}
	if s == "" {
		return t
	}
	start := len(ar.toks)
	for w := range strings.FieldsFuncSeq(s, func(r rune) bool { return !wordRune(r) }) {
		ar.toks = append(ar.toks, w)
	}
	t.toks = ar.toks[start:len(ar.toks):len(ar.toks)]
	slices.Sort(t.toks)
	start = len(ar.runes)
	n := 0
	for _, r := range s {
		if n == maxEditRunes {
			break
		}
		ar.runes = append(ar.runes, r)
		n++
	}
	t.runes = ar.runes[start:len(ar.runes):len(ar.runes)]
	return t
}

// sim compares two prepared texts, case- and whitespace-insensitive, in
// [0, 1]: 1 when equal; otherwise the mean of the word overlap (Dice) and the
// edit-distance ratio, raised to 0.7 when the words of one are all in the
// other ("Save" and "Save changes"). Two empty texts are equal; one empty
// text is like nothing.
func (a *text) sim(b *text) float64 {
	if a.s == b.s {
		return 1
	}
	if a.s == "" || b.s == "" {
		return 0
	}
	common := commonWords(a.toks, b.toks)
	dice := 0.0
	if len(a.toks)+len(b.toks) > 0 {
		dice = 2 * float64(common) / float64(len(a.toks)+len(b.toks))
	}
	s := (dice + editRatio(a.runes, b.runes)) / 2
	if common > 0 && (common == len(a.toks) || common == len(b.toks)) {
		s = max(s, 0.7)
	}
	return s
}

// commonWords counts the words two sorted word lists share, each word as
// often as it is in both.
func commonWords(a, b []string) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i], b[j]); {
		case c == 0:
			n++
			i++
			j++
		case c < 0:
			i++
		default:
			j++
		}
	}
	return n
}

// editRatio is 1 - levenshtein(a, b) / max(len): 1 for equal strings, 0 for
// nothing in common. a and b are at most maxEditRunes long.
func editRatio(a, b []rune) float64 {
	n := max(len(a), len(b))
	if n == 0 {
		return 1
	}
	return 1 - float64(levenshtein(a, b))/float64(n)
}

// levenshtein is the edit distance of a and b, at most maxEditRunes long.
func levenshtein(a, b []rune) int {
	var prevBuf, curBuf [maxEditRunes + 1]int
	prev, cur := prevBuf[:len(b)+1], curBuf[:len(b)+1]
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

// domPath is a DOM path split into segments, with each segment's tag.
type domPath struct {
	raw        string
	segs, tags []string
}

// preparePath splits p into segments at " > " and " >> " (shadow
// boundaries count as a segment of their own so they align).
func (ar *textArena) preparePath(p string) domPath {
	dp := domPath{raw: p}
	p = strings.ReplaceAll(p, " >> ", " > >> > ")
	if p == "" {
		return dp
	}
	start := len(ar.toks)
	for seg := range strings.SplitSeq(p, " > ") {
		ar.toks = append(ar.toks, seg)
	}
	n := len(ar.toks) - start
	for _, seg := range ar.toks[start : start+n] {
		ar.toks = append(ar.toks, segTag(seg))
	}
	dp.segs = ar.toks[start : start+n : start+n]
	dp.tags = ar.toks[start+n : start+2*n : start+2*n]
	return dp
}

// sim compares two prepared DOM paths ("main > form#a > div:nth-of-type(2) >
// button") segment by segment, in [0, 1]: a weighted longest common
// subsequence where equal segments count 1 and segments of the same tag
// (a different id or position) count 0.5, over the longer path's length.
// So a wrapper div inserted above the element or a row moved down costs a
// little, a different place in the page a lot.
func (a *domPath) sim(b *domPath) float64 {
	if a.raw == b.raw {
		return 1
	}
	sa, sb := a.segs, b.segs
	if len(sa) == 0 || len(sb) == 0 {
		return 0
	}
	var prevBuf, curBuf [33]float64
	var prev, cur []float64
	if len(sb) < len(prevBuf) {
		prev, cur = prevBuf[:len(sb)+1], curBuf[:len(sb)+1]
	} else {
		prev, cur = make([]float64, len(sb)+1), make([]float64, len(sb)+1)
	}
	for i := 1; i <= len(sa); i++ {
		for j := 1; j <= len(sb); j++ {
			m := 0.0
			switch {
			case sa[i-1] == sb[j-1]:
				m = 1
			case a.tags[i-1] == b.tags[j-1]:
				m = 0.5
			}
			cur[j] = max(prev[j], cur[j-1], prev[j-1]+m)
		}
		prev, cur = cur, prev
	}
	return prev[len(sb)] / float64(max(len(sa), len(sb)))
}

// segTag is the tag of a path segment.
func segTag(s string) string {
	if i := strings.IndexAny(s, "#:"); i >= 0 {
		return s[:i]
	}
	return s
}

// generatedID says whether an id looks made by a framework or a build
// (":r1:", "ember123", "a3f9c2e1", a UUID) rather than by a person, so it
// may change from one page load to the next.
func generatedID(id string) bool {
	if strings.ContainsAny(id, ":") {
		return true
	}
	digits, run, hex := 0, 0, 0
	for _, r := range id {
		switch {
		case unicode.IsDigit(r):
			run++
			digits = max(digits, run)
		default:
			run = 0
		}
		if unicode.IsDigit(r) || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F') || r == '-' {
			hex++
		}
	}
	if digits >= 3 {
		return true
	}
	return len(id) >= 8 && hex == len(id) && digits > 0
}
