package browser

import (
	"strconv"
	"strings"

	"github.com/go-rod/rod/lib/proto"
)

// Computed styles requested from DOMSnapshot.captureSnapshot, in this order.
var snapshotStyles = []string{"visibility", "cursor", "pointer-events", "overflow", "position"}

const (
	styleVisibility = iota
	styleCursor
	stylePointerEvents
	styleOverflow
	stylePosition
)

// DOM node types used by the walks.
const (
	nodeElement  = 1
	nodeText     = 3
	nodeDocument = 9
)

// domDoc is one document (the page or a frame) of a DOMSnapshot capture,
// indexed for the walks a snapshot makes. Node indexes are those of the
// capture: pre-order, so a parent always precedes its children. Shadow
// roots (open and closed) are flattened into their hosts by the capture.
type domDoc struct {
	index    int
	frameID  proto.PageFrameID
	url      string
	title    string
	scrollX  float64
	scrollY  float64
	contentW float64
	contentH float64
	// originX/Y place this document's viewport in the top page's viewport;
	// ok is false when the owner's box could not be read (then the
	// document's boxes are unknown and it is skipped).
	originX, originY float64
	originOK         bool
	// viewW/H is the frame's viewport (its owner's content box); unset
	// for the top document.
	viewW, viewH float64
	// owner is the iframe element (in ownerDoc) holding this document; -1
	// for the top document.
	ownerDoc, owner int

	parent     []int
	children   [][]int
	nodeType   []int
	name       []string // upper-case nodeName
	value      []string // nodeValue of text nodes
	backend    []proto.DOMBackendNodeID
	attrs      []proto.DOMSnapshotArrayOfStrings // flattened name, value pairs
	layout     []int                             // node → layout index, -1 without a layout object
	bounds     []Rect                            // by layout index, in this document's coordinates
	styles     []proto.DOMSnapshotArrayOfStrings // by layout index, in snapshotStyles order
	paint      []int                             // by layout index
	strings    []string
	inputValue map[int]string
	textValue  map[int]string
	checked    map[int]bool
	selected   map[int]bool
	clickable  map[int]bool
	contentDoc map[int]int
	pseudo     map[int]bool
}

// newDomDocs indexes every document of a capture. Owners and origins are
// filled in by the caller.
func newDomDocs(res *proto.DOMSnapshotCaptureSnapshotResult) []*domDoc {
	docs := make([]*domDoc, len(res.Documents))
	for i, d := range res.Documents {
		docs[i] = newDomDoc(i, d, res.Strings)
	}
	for i, d := range docs {
		for node, child := range d.contentDoc {
			if child > 0 && child < len(docs) && child != i {
				docs[child].ownerDoc, docs[child].owner = i, node
			}
		}
	}
	return docs
}

func newDomDoc(index int, d *proto.DOMSnapshotDocumentSnapshot, strs []string) *domDoc {
	str := func(i proto.DOMSnapshotStringIndex) string {
		if i < 0 || int(i) >= len(strs) {
			return ""
		}
		return strs[i]
	}
	n := d.Nodes
	count := len(n.ParentIndex)
	doc := &domDoc{
		index:    index,
		frameID:  proto.PageFrameID(str(d.FrameID)),
		url:      str(d.DocumentURL),
		title:    str(d.Title),
		ownerDoc: -1,
		owner:    -1,
		parent:   n.ParentIndex,
		children: make([][]int, count),
		nodeType: n.NodeType,
		name:     make([]string, count),
		value:    make([]string, count),
		backend:  n.BackendNodeID,
		attrs:    make([]proto.DOMSnapshotArrayOfStrings, count),
		layout:   make([]int, count),
		strings:  strs,
	}
	if index == 0 {
		doc.originOK = true
	}
	for _, p := range []struct {
		dst *float64
		src *float64
	}{{&doc.scrollX, d.ScrollOffsetX}, {&doc.scrollY, d.ScrollOffsetY}, {&doc.contentW, d.ContentWidth}, {&doc.contentH, d.ContentHeight}} {
		if p.src != nil {
			*p.dst = *p.src
		}
	}
	for i := 0; i < count; i++ {
		if p := n.ParentIndex[i]; p >= 0 && p < count {
			doc.children[p] = append(doc.children[p], i)
		}
		if i < len(n.NodeName) {
			doc.name[i] = str(n.NodeName[i])
		}
		if i < len(n.NodeValue) && i < len(n.NodeType) && n.NodeType[i] == nodeText {
			doc.value[i] = str(n.NodeValue[i])
		}
		if i < len(n.Attributes) {
			doc.attrs[i] = n.Attributes[i]
		}
		doc.layout[i] = -1
	}
	doc.inputValue = rareStrings(n.InputValue, str)
	doc.textValue = rareStrings(n.TextValue, str)
	doc.checked = rareBools(n.InputChecked)
	doc.selected = rareBools(n.OptionSelected)
	doc.clickable = rareBools(n.IsClickable)
	doc.pseudo = map[int]bool{}
	if n.PseudoType != nil {
		for _, i := range n.PseudoType.Index {
			doc.pseudo[i] = true
		}
	}
	doc.contentDoc = map[int]int{}
	if n.ContentDocumentIndex != nil {
		for k, i := range n.ContentDocumentIndex.Index {
			doc.contentDoc[i] = n.ContentDocumentIndex.Value[k]
		}
	}
	if l := d.Layout; l != nil {
		doc.bounds = make([]Rect, len(l.NodeIndex))
		doc.styles = make([]proto.DOMSnapshotArrayOfStrings, len(l.NodeIndex))
		for k, node := range l.NodeIndex {
			if node >= 0 && node < count {
				doc.layout[node] = k
			}
			if k < len(l.Bounds) && len(l.Bounds[k]) == 4 {
				b := l.Bounds[k]
				doc.bounds[k] = Rect{X: b[0], Y: b[1], Width: b[2], Height: b[3]}
			}
			if k < len(l.Styles) {
				doc.styles[k] = l.Styles[k]
			}
		}
		doc.paint = l.PaintOrders
	}
	return doc
}

func rareStrings(r *proto.DOMSnapshotRareStringData, str func(proto.DOMSnapshotStringIndex) string) map[int]string {
	m := map[int]string{}
	if r == nil {
		return m
	}
	for k, i := range r.Index {
		if k < len(r.Value) {
			m[i] = str(r.Value[k])
		}
	}
	return m
}

func rareBools(r *proto.DOMSnapshotRareBooleanData) map[int]bool {
	m := map[int]bool{}
	if r == nil {
		return m
	}
	for _, i := range r.Index {
		m[i] = true
	}
	return m
}

// attr returns the value of the attribute name (lower case) of node i.
func (d *domDoc) attr(i int, name string) (string, bool) {
	a := d.attrs[i]
	for k := 0; k+1 < len(a); k += 2 {
		if d.str(a[k]) == name {
			return d.str(a[k+1]), true
		}
	}
	return "", false
}

// str resolves a string index of the capture.
func (d *domDoc) str(i proto.DOMSnapshotStringIndex) string {
	if i < 0 || int(i) >= len(d.strings) {
		return ""
	}
	return d.strings[i]
}

// style returns the computed style k (styleVisibility, ...) of node i, ""
// when it has no layout object.
func (d *domDoc) style(i, k int) string {
	l := d.layout[i]
	if l < 0 || l >= len(d.styles) || k >= len(d.styles[l]) {
		return ""
	}
	return d.str(d.styles[l][k])
}

// paintOrder returns the paint order of node i, -1 without a layout object.
func (d *domDoc) paintOrder(i int) int {
	l := d.layout[i]
	if l < 0 || l >= len(d.paint) {
		return -1
	}
	return d.paint[l]
}

// box returns node i's bounding box in top-page viewport coordinates.
func (d *domDoc) box(i int) (Rect, bool) {
	l := d.layout[i]
	if l < 0 || l >= len(d.bounds) || !d.originOK {
		return Rect{}, false
	}
	b := d.bounds[l]
	return Rect{X: d.originX + b.X - d.scrollX, Y: d.originY + b.Y - d.scrollY, Width: b.Width, Height: b.Height}, true
}

// rendered reports whether node i is laid out, has an area and is not
// visibility:hidden. display:none leaves no layout object at all.
func (d *domDoc) rendered(i int) bool {
	l := d.layout[i]
	if l < 0 || l >= len(d.bounds) {
		return false
	}
	b := d.bounds[l]
	if b.Width <= 0 || b.Height <= 0 {
		return false
	}
	v := d.style(i, styleVisibility)
	return v != "hidden" && v != "collapse"
}

// shown reports whether node i is laid out and not visibility:hidden; its
// own box may be empty (an inline link around a block).
func (d *domDoc) shown(i int) bool {
	if d.layout[i] < 0 || !d.originOK {
		return false
	}
	v := d.style(i, styleVisibility)
	return v != "hidden" && v != "collapse"
}

// isElement reports whether node i is an element (not a pseudo element).
func (d *domDoc) isElement(i int) bool {
	return i < len(d.nodeType) && d.nodeType[i] == nodeElement && !d.pseudo[i]
}

// ancestor reports whether a is a proper ancestor of i.
func (d *domDoc) ancestor(a, i int) bool {
	for p := d.parent[i]; p >= 0; p = d.parent[p] {
		if p == a {
			return true
		}
	}
	return false
}

// text returns the rendered text of node i's subtree with whitespace
// collapsed, at most limit bytes (cut at a rune boundary). skip, when not
// nil, prunes element subtrees (the text of nested controls, for context).
func (d *domDoc) text(i, limit int, skip func(int) bool) string {
	var b strings.Builder
	budget := 4*limit + 64 // raw text, before whitespace is collapsed
	var walk func(int) bool
	walk = func(n int) bool {
		if d.nodeType[n] == nodeText {
			if d.layout[n] >= 0 {
				b.WriteString(d.value[n])
			}
			return b.Len() < budget
		}
		if n != i && skip != nil && d.nodeType[n] == nodeElement && skip(n) {
			b.WriteByte(' ')
			return true
		}
		block := d.nodeType[n] == nodeElement && !inlineTags[d.name[n]]
		if block {
			b.WriteByte(' ')
		}
		for _, c := range d.children[n] {
			if !walk(c) {
				return false
			}
		}
		if block {
			b.WriteByte(' ')
		}
		return true
	}
	walk(i)
	return truncate(collapse(b.String()), limit)
}

// inlineTags are elements whose text runs on with their neighbours'; any
// other element separates words.
var inlineTags = map[string]bool{
	"A": true, "ABBR": true, "B": true, "BDI": true, "BDO": true, "CITE": true, "CODE": true,
	"DATA": true, "DFN": true, "EM": true, "FONT": true, "I": true, "KBD": true, "LABEL": true,
	"MARK": true, "Q": true, "S": true, "SAMP": true, "SMALL": true, "SPAN": true, "STRONG": true,
	"SUB": true, "SUP": true, "TIME": true, "U": true, "VAR": true,
}

// collapse trims s and collapses runs of whitespace to one space.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// truncate cuts s to at most n bytes at a rune boundary, marking the cut
// with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !runeStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + "..."
}

func runeStart(c byte) bool { return c&0xC0 != 0x80 }

// keyboardFocusable reports whether element i is in the tab order: a
// tabindex >= 0, or natively focusable and not disabled.
func (d *domDoc) keyboardFocusable(i int) bool {
	if _, dis := d.attr(i, "disabled"); dis && nativelyDisableable(d.name[i]) {
		return false
	}
	if ti, ok := d.attr(i, "tabindex"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(ti)); err == nil {
			return n >= 0
		}
	}
	switch d.name[i] {
	case "BUTTON", "SELECT", "TEXTAREA", "SUMMARY":
		return true
	case "INPUT":
		t, _ := d.attr(i, "type")
		return !strings.EqualFold(t, "hidden")
	case "A", "AREA":
		_, ok := d.attr(i, "href")
		return ok
	}
	if ce, ok := d.attr(i, "contenteditable"); ok && !strings.EqualFold(ce, "false") {
		return true
	}
	return false
}

func nativelyDisableable(tag string) bool {
	switch tag {
	case "BUTTON", "INPUT", "SELECT", "TEXTAREA", "OPTGROUP", "OPTION", "FIELDSET":
		return true
	}
	return false
}

// walkDocs visits the nodes of every placed document in document order, a
// frame's document right after its iframe element.
func walkDocs(docs []*domDoc, f func(d *domDoc, i int)) {
	var walk func(d *domDoc, i int)
	walk = func(d *domDoc, i int) {
		f(d, i)
		if child, ok := d.contentDoc[i]; ok && child > 0 && child < len(docs) && docs[child].originOK {
			walk(docs[child], 0)
		}
		for _, c := range d.children[i] {
			walk(d, c)
		}
	}
	if len(docs) > 0 && len(docs[0].nodeType) > 0 {
		walk(docs[0], 0)
	}
}
