package browser

import (
	"fmt"
	"strconv"
	"strings"
)

// Element kinds, which decide inclusion and priority.
const (
	kindInteractive = iota // an interactive ARIA role, or keyboard-focusable
	kindHeading
	kindLandmark
	kindClickable // badly marked up: reacts to clicks without a role
)

// Roles included by seed 002 §1.3.2 rule 1, plus the close relatives
// Chromium reports (searchbox, spinbutton, option, treeitem).
var interactiveRoles = map[string]bool{
	"button": true, "link": true, "checkbox": true, "radio": true, "textbox": true,
	"searchbox": true, "combobox": true, "listbox": true, "menuitem": true,
	"menuitemcheckbox": true, "menuitemradio": true, "tab": true, "switch": true,
	"slider": true, "spinbutton": true, "option": true, "treeitem": true,
}

// Landmarks of rule 3.
var landmarkRoles = map[string]bool{"region": true, "dialog": true, "alertdialog": true, "alert": true}

// Roles that never carry a meaning of their own (exclusion rule 1).
var emptyRoles = map[string]bool{
	"": true, "generic": true, "none": true, "presentation": true, "separator": true,
	"StaticText": true, "InlineTextBox": true, "RootWebArea": true, "Iframe": true,
	"LineBreak": true, "paragraph": true, "group": true, "Section": true,
}

// candidate is an element that qualifies for the snapshot.
type candidate struct {
	doc      *domDoc
	node     int
	kind     int
	role     string
	name     string
	level    int
	states   []string
	value    string
	options  []string
	hint     string
	href     string
	box      Rect
	heading  string // nearest preceding heading, for context
	focused  bool
	covered  bool
	vis      int // 0 fully in the viewport, 1 partly, 2 outside
	ordinal  int
	context  string
	ctxReady bool
	// standIn: a label listed in place of its hidden control; the
	// accessibility tree describes the label, not the control.
	standIn bool
}

// builder turns the documents of a capture into the candidates of a
// snapshot. Inclusion is decided from the DOM alone (markup, layout,
// styles): the accessibility tree of a large page costs a second or more,
// so it is read afterwards, node by node, for the elements listed only.
type builder struct {
	docs  []*domDoc
	vp    ViewportInfo
	opts  SnapshotOptions
	cands []*candidate
	// unreachable lists frames whose documents the capture did not hold
	// (out-of-process iframes).
	unreachable []string
	lastHeading string
	ids         []map[string]int // per document: id → first element
	labels      []map[string]int // per document: for → first label
}

func newBuilder(docs []*domDoc, vp ViewportInfo, opts SnapshotOptions) *builder {
	return &builder{docs: docs, vp: vp, opts: opts, ids: make([]map[string]int, len(docs)), labels: make([]map[string]int, len(docs))}
}

// collect walks every document in document order (a frame's document at
// its iframe) and gathers the qualifying elements.
func (b *builder) collect() {
	b.walk(b.docs[0], 0, walkState{clip: everywhere, docClip: everywhere})
	b.dropWrappers()
	b.markCovered()
}

// everywhere is the clip of the top document: page scrolling reaches all
// of it.
var everywhere = Rect{X: -1e9, Y: -1e9, Width: 2e9, Height: 2e9}

// walkState is what a node inherits from its ancestors.
type walkState struct {
	inControl bool // an ancestor is an interactive element
	hidden    bool // an ancestor is aria-hidden
	// clip is the area the ancestors' overflow and the frames' viewports
	// let show, in top-page coordinates; docClip is the document's own
	// (what a position:fixed element is clipped to).
	clip, docClip Rect
}

func (b *builder) walk(d *domDoc, i int, st walkState) {
	if d.isElement(i) {
		if _, inert := d.attr(i, "inert"); inert {
			return
		}
		if v, _ := d.attr(i, "aria-hidden"); v == "true" {
			st.hidden = true
		}
		if d.style(i, stylePosition) == "fixed" {
			st.clip = st.docClip
		}
		c := b.consider(d, i, st)
		if c != nil {
			b.cands = append(b.cands, c)
			if c.kind == kindInteractive {
				st.inControl = true
			}
		}
		if child, ok := d.contentDoc[i]; ok && child > 0 && child < len(b.docs) {
			if cd := b.docs[child]; cd.originOK && d.rendered(i) {
				frame := intersect(st.clip, Rect{X: cd.originX, Y: cd.originY, Width: cd.viewW, Height: cd.viewH})
				b.walk(cd, 0, walkState{clip: frame, docClip: frame})
			}
		} else if d.name[i] == "IFRAME" || d.name[i] == "FRAME" {
			b.noteUnreachable(d, i)
		}
		if clips(d.style(i, styleOverflow)) && d.name[i] != "HTML" && d.name[i] != "BODY" {
			if r, ok := d.box(i); ok {
				st.clip = intersect(st.clip, r)
			}
		}
	}
	for _, c := range d.children[i] {
		b.walk(d, c, st)
	}
}

// clips reports whether a computed overflow ("hidden", "auto scroll", ...)
// clips the element's descendants.
func clips(overflow string) bool {
	for _, v := range strings.Fields(overflow) {
		if v != "visible" {
			return true
		}
	}
	return false
}

func intersect(a, b Rect) Rect {
	x0, y0 := max(a.X, b.X), max(a.Y, b.Y)
	x1, y1 := min(a.X+a.Width, b.X+b.Width), min(a.Y+a.Height, b.Y+b.Height)
	if x1 <= x0 || y1 <= y0 {
		return Rect{X: x0, Y: y0}
	}
	return Rect{X: x0, Y: y0, Width: x1 - x0, Height: y1 - y0}
}

// noteUnreachable records a rendered iframe whose document is not in the
// capture: it lives in another renderer (site isolation). The iframe
// itself is listed so the model can still reach it by coordinates.
func (b *builder) noteUnreachable(d *domDoc, i int) {
	src, _ := d.attr(i, "src")
	if !d.rendered(i) || src == "" || strings.HasPrefix(src, "about:") || strings.HasPrefix(src, "javascript:") {
		return
	}
	box, ok := d.box(i)
	if !ok {
		return
	}
	name, _ := d.attr(i, "title")
	if name == "" {
		name = src
	}
	b.unreachable = append(b.unreachable, fmt.Sprintf("frame %s is out of process: its content is not in the snapshot", src))
	b.cands = append(b.cands, &candidate{doc: d, node: i, kind: kindLandmark, role: "iframe", name: truncate(name, 200), box: box, vis: visibility(box, b.vp), heading: b.lastHeading})
}

func (b *builder) unreachableFrames() []string { return b.unreachable }

// consider decides whether element i qualifies (seed 002 §1.3.2, plus
// visible controls that pages mark up badly) and describes it from the
// DOM; the accessibility tree refines the listed ones later.
func (b *builder) consider(d *domDoc, i int, st walkState) *candidate {
	switch d.name[i] {
	case "HTML", "BODY", "HEAD", "IFRAME", "FRAME", "SCRIPT", "STYLE", "TEMPLATE", "OPTGROUP":
		return nil
	}
	if !d.shown(i) {
		return nil
	}
	c := &candidate{doc: d, node: i}
	c.role, c.level = domRole(d, i)
	focusable := d.keyboardFocusable(i)
	switch {
	case st.hidden:
		// A wrapper wrongly aria-hidden still shows its controls and lets
		// the keyboard reach them; anything else under it is hidden.
		if !focusable {
			return nil
		}
		c.kind = kindInteractive
	case c.role == "heading":
		b.noteHeading(d.text(i, 80, nil))
		if c.level > 3 {
			return nil
		}
		c.kind = kindHeading
	case interactiveRoles[c.role]:
		c.kind = kindInteractive
	case landmarkRoles[c.role]:
		c.kind = kindLandmark
	case focusable:
		c.kind = kindInteractive
	case !st.inControl && b.looksClickable(d, i):
		c.kind = kindClickable
	default:
		return nil
	}
	if emptyRoles[c.role] {
		c.role = "clickable"
	}
	c.name = domName(d, i, c.role, b)
	switch {
	case c.name != "":
	case c.role == "alert":
		c.name = d.text(i, 200, nil)
	case c.role == "dialog" || c.role == "alertdialog":
		// What an unnamed dialog is about: its heading, else its text
		// without its buttons.
		if h := d.findDescendant(i, func(n int) bool { r, _ := domRole(d, n); return r == "heading" }); h >= 0 {
			c.name = d.text(h, 80, nil)
		} else {
			c.name = d.text(i, 80, isControl(d))
		}
	}
	b.domStates(c)
	if d.name[i] == "LABEL" && !b.labelStandsIn(c) {
		return nil
	}
	box, _ := d.box(i)
	if box.Width <= 0 || box.Height <= 0 {
		box = d.descendantBox(i, box)
		if box.Width <= 0 || box.Height <= 0 {
			return nil
		}
	}
	// Parked far left or above the page (skip links, off-canvas menus):
	// no scroll reaches it. Inside a scroll container it is only scrolled
	// away.
	if l := d.layout[i]; st.clip == st.docClip && (d.bounds[l].X+d.bounds[l].Width <= 0 || d.bounds[l].Y+d.bounds[l].Height <= 0) {
		return nil
	}
	c.box = box
	// Scrolled away inside a scroll container or a frame counts as
	// offscreen: it takes a scroll to reach.
	shown := intersect(box, st.clip)
	switch {
	case shown.Width <= 0 || shown.Height <= 0:
		c.vis = 2
	default:
		c.vis = visibility(shown, b.vp)
		if c.vis == 0 && shown != box {
			c.vis = 1
		}
	}
	if c.vis == 2 {
		if b.opts.ViewportOnly {
			return nil
		}
		c.states = append(c.states, "offscreen")
	}
	c.name = truncate(c.name, 200)
	b.describeValue(c)
	if c.name == "" {
		c.hint = hintOf(d, i)
	}
	if c.role == "link" {
		c.href, _ = d.attr(i, "href")
	}
	c.heading = b.lastHeading
	return c
}

func (b *builder) noteHeading(s string) {
	if s = collapse(s); s != "" {
		b.lastHeading = truncate(s, 80)
	}
}

// looksClickable: a handler or a pointer cursor marks an element the user
// would click, whatever its markup. The cursor is inherited, so only the
// element where it starts counts.
func (b *builder) looksClickable(d *domDoc, i int) bool {
	if !d.rendered(i) {
		return false
	}
	if d.clickable[i] {
		return true
	}
	if d.style(i, styleCursor) != "pointer" {
		return false
	}
	p := d.parent[i]
	return p < 0 || d.style(p, styleCursor) != "pointer"
}

// labelStandsIn: a clickable label is listed only in place of a control
// that is not rendered itself (a styled checkbox whose input is hidden); it
// then takes the control's role and checked state.
func (b *builder) labelStandsIn(c *candidate) bool {
	d := c.doc
	ctl := -1
	if id, ok := d.attr(c.node, "for"); ok {
		if n, ok := b.idIndex(d)[id]; ok {
			ctl = n
		}
	}
	if ctl < 0 {
		ctl = d.findDescendant(c.node, func(n int) bool {
			switch d.name[n] {
			case "INPUT", "SELECT", "TEXTAREA":
				return true
			}
			return false
		})
	}
	if ctl < 0 {
		return true
	}
	if d.rendered(ctl) {
		return false
	}
	c.role, _ = domRole(d, ctl)
	c.kind = kindInteractive
	c.standIn = true
	if d.checked[ctl] {
		c.states = append(c.states, "checked")
	}
	return true
}

// idIndex maps the ids of d's elements to the first element with each.
func (b *builder) idIndex(d *domDoc) map[string]int {
	if m := b.ids[d.index]; m != nil {
		return m
	}
	m := map[string]int{}
	for i := range d.nodeType {
		if d.nodeType[i] == nodeElement {
			if id, ok := d.attr(i, "id"); ok && id != "" {
				if _, dup := m[id]; !dup {
					m[id] = i
				}
			}
		}
	}
	b.ids[d.index] = m
	return m
}

// labelIndex maps the for attribute of d's labels to the first label.
func (b *builder) labelIndex(d *domDoc) map[string]int {
	if m := b.labels[d.index]; m != nil {
		return m
	}
	m := map[string]int{}
	for i := range d.nodeType {
		if d.nodeType[i] == nodeElement && d.name[i] == "LABEL" {
			if f, ok := d.attr(i, "for"); ok && f != "" {
				if _, dup := m[f]; !dup {
					m[f] = i
				}
			}
		}
	}
	b.labels[d.index] = m
	return m
}

// describeValue sets an input's value, never a password's, and a select's
// options.
func (b *builder) describeValue(c *candidate) {
	d, i := c.doc, c.node
	switch d.name[i] {
	case "INPUT":
		t, _ := d.attr(i, "type")
		switch strings.ToLower(t) {
		case "checkbox", "radio", "button", "submit", "reset", "image", "file", "hidden":
			return
		case "password":
			if d.inputValue[i] != "" {
				c.states = append(c.states, "filled")
			}
			return
		}
		c.value = d.inputValue[i]
	case "TEXTAREA":
		c.value = d.textValue[i]
	case "SELECT":
		var opts, sel []string
		d.eachOption(i, func(n int) {
			text := collapse(d.text(n, 60, nil))
			if text == "" {
				text = collapse(d.value[n])
				if v, ok := d.attr(n, "label"); ok {
					text = v
				}
			}
			if text == "" {
				text = optionText(d, n)
			}
			opts = append(opts, text)
			if d.selected[n] {
				sel = append(sel, text)
			}
		})
		c.value = strings.Join(sel, ", ")
		if len(opts) > 10 {
			opts = append(opts[:10], "+"+strconv.Itoa(len(opts)-10))
		}
		c.options = opts
	}
	c.value = truncate(c.value, 100)
}

// optionText is an option's text from the DOM (options of a closed select
// have no layout, so d.text, which reads rendered text, finds none).
func optionText(d *domDoc, n int) string {
	var b strings.Builder
	for _, c := range d.children[n] {
		if d.nodeType[c] == nodeText {
			b.WriteString(d.value[c])
		}
	}
	return truncate(collapse(b.String()), 60)
}

func (d *domDoc) eachOption(sel int, f func(int)) {
	for _, c := range d.children[sel] {
		switch d.name[c] {
		case "OPTION":
			f(c)
		case "OPTGROUP":
			d.eachOption(c, f)
		}
	}
}

func (d *domDoc) findDescendant(i int, match func(int) bool) int {
	for _, c := range d.children[i] {
		if d.nodeType[c] == nodeElement && match(c) {
			return c
		}
		if n := d.findDescendant(c, match); n >= 0 {
			return n
		}
	}
	return -1
}

// descendantBox is the union of the rendered boxes below i, for inline
// elements whose own box is empty (a link around a block).
func (d *domDoc) descendantBox(i int, own Rect) Rect {
	var u Rect
	var walk func(int)
	walk = func(n int) {
		for _, c := range d.children[n] {
			if r, ok := d.box(c); ok && r.Width > 0 && r.Height > 0 {
				u = union(u, r)
				continue
			}
			walk(c)
		}
	}
	walk(i)
	if u.Width <= 0 {
		return own
	}
	return u
}

func union(a, b Rect) Rect {
	if a.Width <= 0 || a.Height <= 0 {
		return b
	}
	x0, y0 := min(a.X, b.X), min(a.Y, b.Y)
	x1, y1 := max(a.X+a.Width, b.X+b.Width), max(a.Y+a.Height, b.Y+b.Height)
	return Rect{X: x0, Y: y0, Width: x1 - x0, Height: y1 - y0}
}

// visibility classes a box for priority: 0 fully in the viewport, 1
// partly, 2 outside.
func visibility(r Rect, vp ViewportInfo) int {
	if r.X >= 0 && r.Y >= 0 && r.X+r.Width <= vp.Width && r.Y+r.Height <= vp.Height {
		return 0
	}
	if r.X < vp.Width && r.Y < vp.Height && r.X+r.Width > 0 && r.Y+r.Height > 0 {
		return 1
	}
	return 2
}

// axStates lists the states of seed 002 §1.3.4 that apply, positives only:
// an absent "checked" on a checkbox means unchecked.
func axStates(c *candidate, a *axNode) {
	add := func(s string) { c.states = append(c.states, s) }
	if a.disabled {
		add("disabled")
	}
	switch a.checked {
	case "true":
		add("checked")
	case "mixed":
		add("mixed")
	}
	switch a.pressed {
	case "true":
		add("pressed")
	case "mixed":
		add("mixed")
	}
	switch a.expanded {
	case "true":
		add("expanded")
	case "false":
		add("collapsed")
	}
	if a.selected && c.role != "combobox" {
		add("selected")
	}
	if a.required {
		add("required")
	}
	if a.readonly {
		add("readonly")
	}
	if a.invalid {
		add("invalid")
	}
	if a.busy {
		add("busy")
	}
}

// domStates are the states read from the DOM when the accessibility tree
// does not describe the element.
func (b *builder) domStates(c *candidate) {
	d, i := c.doc, c.node
	if _, ok := d.attr(i, "disabled"); ok && nativelyDisableable(d.name[i]) {
		c.states = append(c.states, "disabled")
	} else if v, _ := d.attr(i, "aria-disabled"); v == "true" {
		c.states = append(c.states, "disabled")
	}
	if d.checked[i] {
		c.states = append(c.states, "checked")
	} else if v, _ := d.attr(i, "aria-checked"); v == "true" {
		c.states = append(c.states, "checked")
	}
	if v, ok := d.attr(i, "aria-expanded"); ok {
		if v == "true" {
			c.states = append(c.states, "expanded")
		} else {
			c.states = append(c.states, "collapsed")
		}
	}
	if _, ok := d.attr(i, "required"); ok {
		c.states = append(c.states, "required")
	}
	if _, ok := d.attr(i, "readonly"); ok {
		c.states = append(c.states, "readonly")
	}
}

// openDialogs returns the open <dialog> elements, which may be modal.
func (b *builder) openDialogs() []docNode {
	var out []docNode
	for _, d := range b.docs {
		if !d.originOK {
			continue
		}
		for i := range d.nodeType {
			if d.isElement(i) && d.name[i] == "DIALOG" && d.layout[i] >= 0 {
				if _, open := d.attr(i, "open"); open {
					out = append(out, docNode{d, i})
				}
			}
		}
	}
	return out
}

// docNode is one node of one document.
type docNode struct {
	doc  *domDoc
	node int
}

// dropInert removes candidates a modal dialog makes inert: everything of
// the dialog's document (and of the frames in it) outside the dialog.
func (b *builder) dropInert(modals []docNode) {
	if len(modals) == 0 {
		return
	}
	out := b.cands[:0]
	for _, c := range b.cands {
		inert := false
		for _, m := range modals {
			if b.outsideModal(c, m) {
				inert = true
				break
			}
		}
		if !inert {
			out = append(out, c)
		}
	}
	b.cands = out
}

// outsideModal reports whether c lies in m's document (or a frame within
// it) but outside the dialog m.
func (b *builder) outsideModal(c *candidate, m docNode) bool {
	d, n := c.doc, c.node
	for d != m.doc {
		if d.ownerDoc < 0 {
			return false // another document tree: m does not reach it
		}
		d, n = b.docs[d.ownerDoc], d.owner
	}
	return n != m.node && !d.ancestor(m.node, n)
}

// dropWrappers removes clickable elements that hold interactive ones (a
// card or a root with a delegated click handler): their controls are the
// targets. Candidates are in document order, so descendants follow.
func (b *builder) dropWrappers() {
	out := b.cands[:0]
	for k, c := range b.cands {
		if c.kind == kindClickable && b.holdsControl(k) {
			continue
		}
		out = append(out, c)
	}
	b.cands = out
}

func (b *builder) holdsControl(k int) bool {
	c := b.cands[k]
	for _, n := range b.cands[k+1:] {
		if n.doc != c.doc || !c.doc.ancestor(c.node, n.node) {
			return false
		}
		if n.kind == kindInteractive {
			return true
		}
	}
	return false
}
