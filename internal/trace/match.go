package trace

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// Confidence rule. A match is confident when the best score is at least
// ConfidentScore and beats the runner-up by at least ConfidentMargin; or
// when the best is the only element of the page carrying the
// fingerprint's test id (data-testid, data-test, data-qa, data-cy) or
// hand-written id, its role agrees, and it scores at least IdentityScore.
// Never when the runner-up has the same role and is alike in everything
// but position (see alikeMargin): then only a model can choose.
const (
	ConfidentScore  = 0.65
	ConfidentMargin = 0.05
	IdentityScore   = 0.5
)

// Evidence weights: each feature the fingerprint has contributes
// weight × similarity (in [0, 1]) to the score, which is divided by the
// sum of those weights, then multiplied by the role and value-kind factors.
// Identity attributes weigh most because people put them there to find
// the element; the accessible name next, because it is what the user reads
// and what the model chose; text, context (the row or section) and
// neighbours tell identical controls apart; the DOM path, tag and box are
// weak, since layouts change more often than meaning.
const (
	wTestID     = 6.0 // each of data-testid, data-test, data-qa, data-cy
	wID         = 4.0 // a hand-written id
	wGenID      = 1.0 // an id that looks generated (":r1:", "ember123")
	wNameAttr   = 3.0 // a form control's name attribute
	wName       = 4.0 // the accessible name
	wNoName     = 1.0 // an unnamed element: "unnamed" is weak evidence
	wText       = 2.0 // the visible text
	wContext    = 2.5 // the row, list item, fieldset or section
	wNeighbours = 1.5 // the nearest listed elements before and after
	wPath       = 1.5 // the DOM path
	wTag        = 1.0 // the tag name
	wBox        = 1.0 // where it was, relative to the viewport
	wHref       = 1.0 // a link's href, ids in its path ignored
	wMinorAttr  = 0.5 // each of placeholder, aria-label, title, alt, type, role, for
)

// Factors the weighted score is multiplied by. A different role is the
// strongest evidence against a candidate: a "Save" link is not the "Save"
// button, so it needs overwhelming other evidence to win. A role of the
// same family (button ~ link ~ clickable, textbox ~ combobox, checkbox ~
// switch) is a lighter penalty, as is a form control of another value kind
// (an email field that became a text field).
const (
	roleFamilyFactor = 0.85
	roleOtherFactor  = 0.35
	valueKindFactor  = 0.8
)

// Similarity a detail feature gets when the fingerprint has it but the
// candidate's details were not read (neutral), and when an identity
// attribute was removed from the candidate (weakly against: refactors drop
// test ids; a different value is 0).
const (
	unknownSim = 0.5
	droppedSim = 0.25
)

// DefaultShortlist is the number of candidates Shortlist returns for k <= 0.
const DefaultShortlist = 12

var (
	testIDAttrs   = []string{"data-testid", "data-test", "data-qa", "data-cy"}
	identityAttrs = append(slices.Clone(testIDAttrs), "id", "name")
	minorAttrs    = []string{"placeholder", "aria-label", "title", "alt", "type", "role", "for"}
)

// Candidate is one element of a live snapshot scored against a fingerprint.
type Candidate struct {
	Ref   string  `json:"ref"`
	Role  string  `json:"role"`
	Name  string  `json:"name,omitempty"`
	Score float64 `json:"score"`
	// Why lists the features that agreed and disagreed.
	Why string `json:"why,omitempty"`
}

// Resolution is where a fingerprint landed in a live snapshot.
type Resolution struct {
	// Ref is the best candidate's ref, "" when the snapshot has no
	// elements. It is set even when not Confident, as the best guess.
	Ref   string  `json:"ref,omitempty"`
	Score float64 `json:"score"`
	// Confident says Ref may be acted on without asking a model (see
	// ConfidentScore).
	Confident bool `json:"confident"`
	// Reason explains the decision in one line.
	Reason string `json:"reason"`
	// Runners are the next best candidates (at most 3), best first.
	Runners []Candidate `json:"runners,omitempty"`
}

// Shortlist returns the refs of the k elements of snap (DefaultShortlist
// when k <= 0) that best match fp by the snapshot's own features (role,
// name, context, neighbours, box), best first: the ones to read details
// of (browser.Page.ElementDetails) before Match, so a replay step costs
// one details call. The element at fp.Ref is always included.
func Shortlist(fp Fingerprint, snap *browser.Snapshot, k int) []string {
	if k <= 0 {
		k = DefaultShortlist
	}
	cands := rank(fp, snap, nil, 0)
	out := make([]string, 0, min(k, len(cands))+1)
	hasRef := false
	for _, c := range cands[:min(k, len(cands))] {
		out = append(out, c.Ref)
		hasRef = hasRef || c.Ref == fp.Ref
	}
	if !hasRef && fp.Ref != "" && slices.ContainsFunc(snap.Elements, func(e browser.Element) bool { return e.Ref == fp.Ref }) {
		out = append(out, fp.Ref)
	}
	return out
}

// Match scores every element of snap against fp and picks the best (see
// the weights and ConfidentScore). details are the elements' DOM details
// by ref, typically of Shortlist's refs; an element without them is scored
// neutral on the DOM features, and a nil map leaves the DOM features out
// for all. Match is deterministic: equal scores go to the element at
// fp.Ref, then to the first in document order.
func Match(fp Fingerprint, snap *browser.Snapshot, details map[string]browser.ElementDetails) Resolution {
	cands := rank(fp, snap, details, 4) // the best and 3 runners
	if len(cands) == 0 {
		return Resolution{Reason: "the page lists no elements"}
	}
	best := cands[0]
	res := Resolution{Ref: best.Ref, Score: best.Score}
	for _, c := range cands[1:min(len(cands), 4)] {
		res.Runners = append(res.Runners, c.Candidate)
	}
	second := 0.0
	if len(cands) > 1 {
		second = cands[1].Score
	}
	desc := fmt.Sprintf("%s %s %q %.2f (%s)", best.Ref, best.Role, best.Name, best.Score, best.Why)
	switch {
	case best.unique != "" && best.Score >= IdentityScore:
		res.Confident = true
		res.Reason = fmt.Sprintf("confident: the only element with %s: %s", best.unique, desc)
	case best.Score < ConfidentScore:
		res.Reason = fmt.Sprintf("not confident: the best, %s, is below %.2f", desc, ConfidentScore)
	case len(cands) > 1 && alike(best, cands[1]):
		r := cands[1]
		res.Reason = fmt.Sprintf("not confident: %s and %s %s %q %.2f differ only in their place in the page", desc, r.Ref, r.Role, r.Name, r.Score)
	case best.Score-second < ConfidentMargin:
		r := cands[1]
		res.Reason = fmt.Sprintf("not confident: %s and %s %s %q %.2f are closer than %.2f", desc, r.Ref, r.Role, r.Name, r.Score, ConfidentMargin)
	default:
		res.Confident = true
		res.Reason = fmt.Sprintf("confident: %s, next %.2f", desc, second)
	}
	return res
}

// alikeMargin: two candidates whose scores without the positional
// features (neighbours, path, box) are this close are the same thing as
// far as the fingerprint can tell (two "Delete" buttons in two rows of the
// same name): position alone does not make a confident choice.
const alikeMargin = 0.02

func alike(a, b scored) bool {
	return a.Role == b.Role && math.Abs(a.sem-b.sem) < alikeMargin
}

// scored is a candidate with what ranking needs.
type scored struct {
	Candidate
	index int
	// unique names the identity attribute only this candidate carries
	// with the fingerprint's value, when its role agrees.
	unique string
	// sem is the score of what the element is, leaving out where it is.
	sem float64
}

// rank scores every element of snap, best first; the first explain of
// them with their Why and unique (which the order does not depend on).
func rank(fp Fingerprint, snap *browser.Snapshot, details map[string]browser.ElementDetails, explain int) []scored {
	m := newMatcher(fp, snap, details)
	out := make([]scored, len(snap.Elements))
	for i := range snap.Elements {
		out[i] = m.score(i, false)
	}
	// The order is total (index breaks every tie), so an unstable sort
	// gives the one result.
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if (a.Ref == fp.Ref) != (b.Ref == fp.Ref) {
			if a.Ref == fp.Ref {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.index, b.index)
	})
	for j := range min(explain, len(out)) {
		out[j] = m.score(out[j].index, true)
	}
	return out
}

// matcher holds what scoring every element of one snapshot shares.
type matcher struct {
	fp      Fingerprint
	snap    *browser.Snapshot
	details map[string]browser.ElementDetails
	// dom: the DOM features count (the fingerprint has them and details
	// were given).
	dom bool
	// holders counts, per identity attribute of fp, the elements whose
	// details carry the same value.
	holders map[string]int
	fpHref  string
	// The fingerprint's texts, prepared.
	fpName, fpContext, fpText text
	fpPath                    domPath
	fpBefore, fpAfter         []text
	// els is the prepared view of the snapshot's elements, by index.
	els []element
}

// element is the prepared view of one snapshot element: its texts
// normalised and split once for all the comparisons that read them (its
// own and, for its name, those of the elements it neighbours).
type element struct {
	name, context text
	// d is the element's details, ok whether there are any; text is
	// d.Text prepared.
	d    browser.ElementDetails
	ok   bool
	text text
	path domPath
}

func newMatcher(fp Fingerprint, snap *browser.Snapshot, details map[string]browser.ElementDetails) *matcher {
	m := &matcher{
		fp: fp, snap: snap, details: details,
		dom:    details != nil && (fp.Tag != "" || len(fp.Attrs) > 0 || fp.Path != ""),
		fpHref: hrefPattern(fp.Attrs["href"]),
	}
	m.prepare()
	if m.dom {
		m.holders = make(map[string]int)
		for _, a := range identityAttrs {
			v := fp.Attrs[a]
			if v == "" {
				continue
			}
			for _, d := range details {
				if d.Attrs[a] == v {
					m.holders[a]++
				}
			}
		}
	}
	return m
}

// prepare normalises the fingerprint's texts and those of the snapshot's
// elements that scoring reads.
func (m *matcher) prepare() {
	fp, els := m.fp, m.snap.Elements
	needContext := fp.Context != ""
	needText := m.dom && fp.Text != ""
	needPath := m.dom && fp.Path != ""
	// Arena sizes: a few words and runes per text.
	n := len(els)
	if needContext {
		n *= 2
	}
	toks := 4 * n
	if needPath {
		toks += 24 * len(els) // a dozen segments and their tags
	}
	ar := textArena{toks: make([]string, 0, toks), runes: make([]rune, 0, 24*n)}
	m.fpName, m.fpContext, m.fpText = ar.prepare(fp.Name), ar.prepare(fp.Context), ar.prepare(fp.Text)
	m.fpPath = ar.preparePath(fp.Path)
	m.fpBefore = prepareNeighbours(&ar, fp.Before)
	m.fpAfter = prepareNeighbours(&ar, fp.After)
	m.els = make([]element, len(els))
	for i := range els {
		e, pe := &els[i], &m.els[i]
		pe.name = ar.prepare(e.Name)
		if needContext {
			pe.context = ar.prepare(e.Context)
		}
		if m.details != nil {
			pe.d, pe.ok = m.details[e.Ref]
		}
		if needText && pe.ok {
			pe.text = ar.prepare(pe.d.Text)
		}
		if needPath && pe.ok {
			pe.path = ar.preparePath(pe.d.Path)
		}
	}
}

func prepareNeighbours(ar *textArena, ns []Neighbour) []text {
	if len(ns) == 0 {
		return nil
	}
	out := make([]text, len(ns))
	for i, n := range ns {
		out[i] = ar.prepare(n.Name)
	}
	return out
}

// evidence accumulates weighted similarities and the notes that explain
// them.
type evidence struct {
	sum, weight float64
	// semSum and semWeight count the features that say what the element
	// is (everything but neighbours, path and box, which say where).
	semSum, semWeight float64
	// explain: keep the notes (agree, differ) that explain the score.
	explain bool
	agree   []string
	differ  []string
}

// positional says whether a feature says where an element is, not what.
func positional(what string) bool {
	switch what {
	case "neighbours", "path", "box":
		return true
	}
	return false
}

func (ev *evidence) add(what string, w, s float64) {
	ev.sum += w * s
	ev.weight += w
	if !positional(what) {
		ev.semSum += w * s
		ev.semWeight += w
	}
	if !ev.explain {
		return
	}
	switch {
	case s >= 0.99:
		ev.agree = append(ev.agree, what)
	case s <= 0.01:
		ev.differ = append(ev.differ, what)
	case s != unknownSim:
		ev.agree = append(ev.agree, what+"~"+strconv.FormatFloat(s, 'f', 2, 64))
	}
}

// note adds a disagreement that is not a weighted feature.
func (ev *evidence) note(what string) {
	if ev.explain {
		ev.differ = append(ev.differ, what)
	}
}

func (ev *evidence) why() string {
	var b strings.Builder
	if len(ev.agree) > 0 {
		b.WriteString("same " + strings.Join(ev.agree, ", "))
	}
	if len(ev.differ) > 0 {
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("differ " + strings.Join(ev.differ, ", "))
	}
	return b.String()
}

// score scores snap.Elements[i]; explain: with Why and unique.
func (m *matcher) score(i int, explain bool) scored {
	fp, e, pe := &m.fp, &m.snap.Elements[i], &m.els[i]
	ev := evidence{explain: explain}
	out := scored{Candidate: Candidate{Ref: e.Ref, Role: e.Role, Name: e.Name}, index: i}

	roleF := roleFactor(fp.Role, e.Role)
	if m.dom {
		m.domEvidence(&ev, &out, pe, roleF == 1)
	}

	switch {
	case fp.Name != "":
		ev.add("name", wName, m.fpName.sim(&pe.name))
	default:
		ev.add("name", wNoName, b2f(pe.name.s == ""))
	}
	if fp.Context != "" {
		ev.add("context", wContext, m.fpContext.sim(&pe.context))
	}
	if len(fp.Before)+len(fp.After) > 0 {
		ev.add("neighbours", wNeighbours, m.neighbourSim(i))
	}
	if fp.Viewport.Width > 0 && fp.Viewport.Height > 0 && m.snap.Viewport.Width > 0 && m.snap.Viewport.Height > 0 {
		ev.add("box", wBox, m.boxSim(e.Box))
	}

	s := 0.0
	if ev.weight > 0 {
		s = ev.sum / ev.weight
	}
	s *= roleF
	if roleF < 1 {
		ev.note("role")
	}
	if fp.ValueKind != "" {
		if k := valueKind(*e, pe.d); k != "" && k != fp.ValueKind {
			s *= valueKindFactor
			ev.note("value kind")
		}
	}
	out.Score = s
	out.sem = roleF
	if ev.semWeight > 0 {
		out.sem *= ev.semSum / ev.semWeight
	}
	if explain {
		out.Why = ev.why()
	}
	return out
}

// domEvidence adds the features of the element's details: identity and
// minor attributes, text, tag, path, href.
func (m *matcher) domEvidence(ev *evidence, out *scored, pe *element, sameRole bool) {
	fp, d, ok := &m.fp, &pe.d, pe.ok
	for _, a := range identityAttrs {
		v := fp.Attrs[a]
		if v == "" {
			continue
		}
		w := wNameAttr
		switch {
		case slices.Contains(testIDAttrs, a):
			w = wTestID
		case a == "id" && generatedID(v):
			w = wGenID
		case a == "id":
			w = wID
		}
		switch got := d.Attrs[a]; {
		case !ok:
			ev.add(a, w, unknownSim)
		case got == v:
			n := max(m.holders[a], 1)
			ev.add(a, w, 1/float64(n))
			if n == 1 && sameRole && w > wNameAttr && out.unique == "" && ev.explain {
				out.unique = a + "=" + strconv.Quote(v)
			}
		case got == "":
			ev.add(a, w, droppedSim)
		default:
			ev.add(a, w, 0)
		}
	}
	// Without details, every feature below is unknown.
	sim := func(known float64) float64 {
		if !ok {
			return unknownSim
		}
		return known
	}
	if m.fpHref != "" {
		ev.add("href", wHref, sim(b2f(ok && hrefPattern(d.Attrs["href"]) == m.fpHref)))
	}
	for _, a := range minorAttrs {
		if v := fp.Attrs[a]; v != "" {
			ev.add(a, wMinorAttr, sim(b2f(d.Attrs[a] == v)))
		}
	}
	if fp.Text != "" {
		ev.add("text", wText, sim(m.fpText.sim(&pe.text)))
	}
	if fp.Tag != "" {
		ev.add("tag", wTag, sim(b2f(fp.Tag == d.Tag)))
	}
	if fp.Path != "" {
		ev.add("path", wPath, sim(m.fpPath.sim(&pe.path)))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// neighbourSim compares the fingerprint's neighbours with those of
// snap.Elements[i]: each recorded neighbour takes its best match on the
// same side (0.3 for the role, 0.7 × the name's similarity), discounted
// to 70% when at another distance; the mean over recorded neighbours.
func (m *matcher) neighbourSim(i int) float64 {
	b := m.neighbourSide(m.fp.Before, m.fpBefore, i, -1)
	a := m.neighbourSide(m.fp.After, m.fpAfter, i, 1)
	return (b + a) / float64(len(m.fp.Before)+len(m.fp.After))
}

// neighbourSide sums, over the recorded neighbours want (names prepared
// in names) on one side of snap.Elements[i] (dir -1 before, 1 after), the
// best match of each among the live neighbours on that side.
func (m *matcher) neighbourSide(want []Neighbour, names []text, i, dir int) float64 {
	els := m.snap.Elements
	total := 0.0
	for j, n := range want {
		best := 0.0
		for k := range maxNeighbours {
			at := i + dir*(1+k)
			if at < 0 || at >= len(els) {
				break
			}
			s := 0.7 * names[j].sim(&m.els[at].name)
			if n.Role == els[at].Role {
				s += 0.3
			}
			if k != j {
				s *= 0.7
			}
			best = max(best, s)
		}
		total += best
	}
	return total
}

// boxSim compares the fingerprint's box with a live viewport box, both
// placed in their own viewport's units (x by its width, y by its height,
// document coordinates): 0.8 × exp(-4 × distance of the centres) + 0.2 ×
// the ratio of the sizes. A box a quarter of the viewport away keeps about
// a third of the position credit.
func (m *matcher) boxSim(live browser.Rect) float64 {
	fp, vp := m.fp, m.snap.Viewport
	b := docBox(m.snap, live)
	fx, fy := (fp.Box.X+fp.Box.Width/2)/fp.Viewport.Width, (fp.Box.Y+fp.Box.Height/2)/fp.Viewport.Height
	lx, ly := (b.X+b.Width/2)/vp.Width, (b.Y+b.Height/2)/vp.Height
	pos := math.Exp(-4 * math.Hypot(fx-lx, fy-ly))
	size := ratio(fp.Box.Width, b.Width) * ratio(fp.Box.Height, b.Height)
	return 0.8*pos + 0.2*size
}

func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return b2f(a == b)
	}
	return min(a, b) / max(a, b)
}

// roleFactor is 1 for the same role, roleFamilyFactor within a family,
// else roleOtherFactor.
func roleFactor(a, b string) float64 {
	if a == b {
		return 1
	}
	if fa, fb := roleFamily(a), roleFamily(b); fa != "" && fa == fb {
		return roleFamilyFactor
	}
	return roleOtherFactor
}

func roleFamily(r string) string {
	switch r {
	case "button", "link", "clickable", "menuitem", "tab", "option", "treeitem":
		return "press"
	case "textbox", "searchbox", "combobox", "spinbutton":
		return "type"
	case "checkbox", "switch", "radio", "menuitemcheckbox", "menuitemradio":
		return "toggle"
	}
	return ""
}

// hrefPattern is an href with its query and fragment dropped and its id
// segments starred (as in URLPattern), so "/orders/17?tab=1" and
// "/orders/18" compare equal.
func hrefPattern(h string) string {
	if h == "" {
		return ""
	}
	if i := strings.IndexAny(h, "?#"); i >= 0 {
		h = h[:i]
	}
	segs := strings.Split(h, "/")
	for i, s := range segs {
		if idSegment(s) {
			segs[i] = "*"
		}
	}
	return strings.Join(segs, "/")
}

// AtRecordedRef says whether the element at fp's recorded ref in snap is
// still, by everything the snapshot shows, the element fp describes: the
// same role, name, heading level and context, the same neighbours on both
// sides, and no other element of snap with that role, name and context.
// A replay then acts on the recorded ref without reading DOM details (the
// exact-ref match); otherwise Match decides. On a page where rows were
// inserted above the target, its ref names another element and its
// neighbours or context differ.
func AtRecordedRef(fp Fingerprint, snap *browser.Snapshot) bool {
	if fp.Ref == "" || snap == nil {
		return false
	}
	i := slices.IndexFunc(snap.Elements, func(e browser.Element) bool { return e.Ref == fp.Ref })
	if i < 0 {
		return false
	}
	e := snap.Elements[i]
	if e.Role != fp.Role || e.Name != fp.Name || e.Level != fp.Level || e.Context != fp.Context {
		return false
	}
	before, after := neighbours(snap.Elements, i)
	if !slices.Equal(before, fp.Before) || !slices.Equal(after, fp.After) {
		return false
	}
	for k, o := range snap.Elements {
		if k != i && o.Role == e.Role && o.Name == e.Name && o.Context == e.Context {
			return false
		}
	}
	return true
}
