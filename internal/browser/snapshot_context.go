package browser

import (
	"strings"
)

// domRole derives an element's role (and a heading's level) from its
// markup, for elements the accessibility tree does not describe: an
// explicit role, else the tag's implicit role, else "clickable".
func domRole(d *domDoc, i int) (string, int) {
	if r, ok := d.attr(i, "role"); ok {
		if f := strings.Fields(r); len(f) > 0 {
			role := strings.ToLower(f[0])
			if role == "heading" {
				lvl := 2
				if v, ok := d.attr(i, "aria-level"); ok && len(v) == 1 && v[0] >= '1' && v[0] <= '9' {
					lvl = int(v[0] - '0')
				}
				return role, lvl
			}
			return role, 0
		}
	}
	tag := d.name[i]
	switch tag {
	case "BUTTON", "SUMMARY":
		return "button", 0
	case "A", "AREA":
		if _, ok := d.attr(i, "href"); ok {
			return "link", 0
		}
	case "SELECT":
		if _, ok := d.attr(i, "multiple"); ok {
			return "listbox", 0
		}
		return "combobox", 0
	case "TEXTAREA":
		return "textbox", 0
	case "OPTION":
		return "option", 0
	case "DIALOG":
		return "dialog", 0
	case "SECTION":
		// A section is a region landmark only when it has a name.
		if _, ok := d.attr(i, "aria-label"); ok {
			return "region", 0
		}
		if _, ok := d.attr(i, "aria-labelledby"); ok {
			return "region", 0
		}
	case "H1", "H2", "H3", "H4", "H5", "H6":
		return "heading", int(tag[1] - '0')
	case "INPUT":
		t, _ := d.attr(i, "type")
		switch strings.ToLower(t) {
		case "checkbox":
			return "checkbox", 0
		case "radio":
			return "radio", 0
		case "button", "submit", "reset", "image", "file":
			return "button", 0
		case "range":
			return "slider", 0
		case "number":
			return "spinbutton", 0
		case "search":
			return "searchbox", 0
		}
		return "textbox", 0
	}
	if ce, ok := d.attr(i, "contenteditable"); ok && !strings.EqualFold(ce, "false") {
		return "textbox", 0
	}
	return "clickable", 0
}

// domName approximates the accessible name from markup: aria-label, a
// label, a button input's value, the text (for roles named by their
// content), title, placeholder, alt.
func domName(d *domDoc, i int, role string, b *builder) string {
	if v, _ := d.attr(i, "aria-label"); strings.TrimSpace(v) != "" {
		return collapse(v)
	}
	if ids, ok := d.attr(i, "aria-labelledby"); ok {
		var parts []string
		for _, id := range strings.Fields(ids) {
			if n, ok := b.idIndex(d)[id]; ok {
				parts = append(parts, d.text(n, 200, nil))
			}
		}
		if s := collapse(strings.Join(parts, " ")); s != "" {
			return s
		}
	}
	tag := d.name[i]
	if tag == "INPUT" || tag == "SELECT" || tag == "TEXTAREA" {
		if id, ok := d.attr(i, "id"); ok && id != "" {
			if n, ok := b.labelIndex(d)[id]; ok {
				if s := d.text(n, 200, nil); s != "" {
					return s
				}
			}
		}
		for p := d.parent[i]; p >= 0; p = d.parent[p] {
			if d.name[p] == "LABEL" {
				if s := d.text(p, 200, nil); s != "" {
					return s
				}
				break
			}
		}
		if tag == "INPUT" {
			t, _ := d.attr(i, "type")
			switch strings.ToLower(t) {
			case "button", "submit", "reset":
				if v := d.inputValue[i]; v != "" {
					return v
				}
			}
		}
	} else if nameFromContent(role) {
		if s := d.text(i, 200, nil); s != "" {
			return s
		}
	}
	for _, a := range []string{"title", "placeholder", "alt"} {
		if v, _ := d.attr(i, a); strings.TrimSpace(v) != "" {
			return collapse(v)
		}
	}
	if img := d.findDescendant(i, func(n int) bool { return d.name[n] == "IMG" }); img >= 0 {
		if v, _ := d.attr(img, "alt"); v != "" {
			return collapse(v)
		}
	}
	return ""
}

// nameFromContent reports whether a role takes its name from its text
// (ARIA's "name from content"); a dialog or a listbox does not.
func nameFromContent(role string) bool {
	switch role {
	case "dialog", "alertdialog", "region", "listbox", "combobox", "textbox", "searchbox",
		"spinbutton", "slider", "alert":
		return false
	}
	return true
}

// hintOf names an element that has no accessible name by its id or class,
// which often say what an icon button does ("btn-close").
func hintOf(d *domDoc, i int) string {
	if v, _ := d.attr(i, "id"); v != "" {
		return truncate("#"+v, 40)
	}
	if v, _ := d.attr(i, "class"); v != "" {
		f := strings.Fields(v)
		if len(f) > 2 {
			f = f[:2]
		}
		return truncate("."+strings.Join(f, "."), 40)
	}
	return ""
}

// maxContext bounds an element's context.
const maxContext = 40

// contextOf returns an element's compact surroundings: the first cell of
// its table row, its list item's text, its fieldset's legend, else the
// nearest heading before it. Text of other controls is left out, and so is
// a context equal to the element's own name.
func (b *builder) contextOf(c *candidate) string {
	if c.ctxReady {
		return c.context
	}
	c.ctxReady = true
	d := c.doc
	own := strings.ToLower(c.name)
	keep := func(s string) bool { return s != "" && strings.ToLower(s) != own }
	for p := d.parent[c.node]; p >= 0; p = d.parent[p] {
		if d.nodeType[p] != nodeElement {
			continue
		}
		role, _ := d.attr(p, "role")
		switch {
		case d.name[p] == "TR" || role == "row":
			for _, cell := range d.children[p] {
				if d.nodeType[cell] != nodeElement || cell == c.node {
					continue
				}
				if s := d.text(cell, maxContext, isControl(d)); keep(s) {
					c.context = s
					return s
				}
			}
		case d.name[p] == "LI" || role == "listitem" || d.name[p] == "ARTICLE":
			if s := d.text(p, maxContext, isControl(d)); keep(s) {
				c.context = s
				return s
			}
		case d.name[p] == "FIELDSET":
			if lg := d.findDescendant(p, func(n int) bool { return d.name[n] == "LEGEND" }); lg >= 0 {
				if s := d.text(lg, maxContext, nil); keep(s) {
					c.context = s
					return s
				}
			}
		}
	}
	if keep(c.heading) {
		c.context = truncate(c.heading, maxContext)
	}
	return c.context
}

// isControl prunes the text of controls from a context: a row's "Edit"
// button says nothing about the row.
func isControl(d *domDoc) func(int) bool {
	return func(n int) bool {
		switch d.name[n] {
		case "BUTTON", "SELECT", "TEXTAREA", "INPUT", "SCRIPT", "STYLE":
			return true
		case "A":
			// A link in a row (the name of the row's item) is context.
			return false
		}
		if r, ok := d.attr(n, "role"); ok {
			switch r {
			case "button", "checkbox", "radio", "switch", "menuitem", "tab":
				return true
			}
		}
		return false
	}
}

// markCovered flags candidates in the viewport whose whole box lies under
// an element painted above them (a modal backdrop, an overlay), the way a
// click at any point of them would land on that element. Elements of a
// frame are checked against their own document and the top page.
func (b *builder) markCovered() {
	covers := make([][]int, len(b.docs))
	for _, c := range b.cands {
		if c.vis == 2 {
			continue
		}
		d := c.doc
		if covers[d.index] == nil {
			covers[d.index] = b.coverers(d)
		}
		if b.coveredIn(d, c.node, c.box, covers[d.index]) {
			c.covered = true
			continue
		}
		if d.index == 0 {
			continue
		}
		// The frame's outermost iframe in the top page stands for it there.
		od, on := d, c.node
		for od.ownerDoc >= 0 {
			od, on = b.docs[od.ownerDoc], od.owner
		}
		if covers[0] == nil {
			covers[0] = b.coverers(b.docs[0])
		}
		if b.coveredIn(od, on, c.box, covers[0]) {
			c.covered = true
		}
	}
}

// coverers lists the elements of d that can catch clicks in the viewport.
func (b *builder) coverers(d *domDoc) []int {
	var out []int
	for i := range d.nodeType {
		if d.nodeType[i] != nodeElement || d.paintOrder(i) < 0 || !d.rendered(i) {
			continue
		}
		switch d.name[i] {
		case "HTML", "BODY", "LABEL":
			continue
		}
		if d.style(i, stylePointerEvents) == "none" {
			continue
		}
		if r, ok := d.box(i); ok && visibility(r, b.vp) < 2 {
			out = append(out, i)
		}
	}
	if out == nil {
		out = []int{}
	}
	return out
}

// coveredIn reports whether one of covers, painted above node i of d and
// neither its ancestor nor its descendant, contains box.
func (b *builder) coveredIn(d *domDoc, i int, box Rect, covers []int) bool {
	order := d.paintOrder(i)
	if order < 0 {
		return false
	}
	for _, k := range covers {
		if d.paintOrder(k) <= order || k == i {
			continue
		}
		r, _ := d.box(k)
		if r.X > box.X+0.5 || r.Y > box.Y+0.5 || r.X+r.Width < box.X+box.Width-0.5 || r.Y+r.Height < box.Y+box.Height-0.5 {
			continue
		}
		if d.ancestor(k, i) || d.ancestor(i, k) {
			continue
		}
		return true
	}
	return false
}
