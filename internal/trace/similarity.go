package trace

import (
	"strings"
	"unicode"
)

// normalize lower-cases s and collapses its whitespace.
func normalize(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// tokens splits a normalised string into words (letters and digits).
func tokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// textSim compares two texts, case- and whitespace-insensitive, in [0, 1]:
// 1 when equal; otherwise the mean of the word overlap (Dice) and the
// edit-distance ratio, raised to 0.7 when the words of one are all in the
// other ("Save" and "Save changes"). Two empty texts are equal; one empty
// text is like nothing.
func textSim(a, b string) float64 {
	a, b = normalize(a), normalize(b)
	if a == b {
		return 1
	}
	if a == "" || b == "" {
		return 0
	}
	ta, tb := tokens(a), tokens(b)
	common := 0
	inB := make(map[string]int, len(tb))
	for _, t := range tb {
		inB[t]++
	}
	for _, t := range ta {
		if inB[t] > 0 {
			inB[t]--
			common++
		}
	}
	dice := 0.0
	if len(ta)+len(tb) > 0 {
		dice = 2 * float64(common) / float64(len(ta)+len(tb))
	}
	s := (dice + editRatio(a, b)) / 2
	if common > 0 && (common == len(ta) || common == len(tb)) {
		s = max(s, 0.7)
	}
	return s
}

// editRatio is 1 - levenshtein(a, b) / max(len): 1 for equal strings, 0 for
// nothing in common. Long strings are cut to 64 runes to bound the cost.
func editRatio(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	const maxRunes = 64
	ra, rb = ra[:min(len(ra), maxRunes)], rb[:min(len(rb), maxRunes)]
	n := max(len(ra), len(rb))
	if n == 0 {
		return 1
	}
	return 1 - float64(levenshtein(ra, rb))/float64(n)
}

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

// pathSim compares two DOM paths ("main > form#a > div:nth-of-type(2) >
// button") segment by segment, in [0, 1]: a weighted longest common
// subsequence where equal segments count 1 and segments of the same tag
// (a different id or position) count 0.5, over the longer path's length.
// So a wrapper div inserted above the element or a row moved down costs a
// little, a different place in the page a lot.
func pathSim(a, b string) float64 {
	if a == b {
		return 1
	}
	sa, sb := pathSegments(a), pathSegments(b)
	if len(sa) == 0 || len(sb) == 0 {
		return 0
	}
	prev := make([]float64, len(sb)+1)
	cur := make([]float64, len(sb)+1)
	for i := 1; i <= len(sa); i++ {
		for j := 1; j <= len(sb); j++ {
			m := 0.0
			switch {
			case sa[i-1] == sb[j-1]:
				m = 1
			case segTag(sa[i-1]) == segTag(sb[j-1]):
				m = 0.5
			}
			cur[j] = max(prev[j], cur[j-1], prev[j-1]+m)
		}
		prev, cur = cur, prev
	}
	return prev[len(sb)] / float64(max(len(sa), len(sb)))
}

// pathSegments splits a path at " > " and " >> " (shadow boundaries count
// as a segment of their own so they align).
func pathSegments(p string) []string {
	p = strings.ReplaceAll(p, " >> ", " > >> > ")
	if p == "" {
		return nil
	}
	return strings.Split(p, " > ")
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
