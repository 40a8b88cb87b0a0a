package browser

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Text renders the snapshot for the model: a short header (page, viewport,
// dialogs answered, tabs when there are several, focus) and one line per
// element, e.g.
//
//	@e3 button "Delete" [Alice Smith] disabled
//
// It is built to cost few tokens: no box unless SnapshotOptions.Boxes
// asked for it (a vision model gets the set-of-marks screenshot), a
// context in brackets only where the role and name alone are ambiguous,
// positive states only (no "enabled", "visible", "unchecked"), offscreen
// elements listed after the visible ones under one marker, headings as
// h1–h3, an empty name replaced by the element's id or class.
func (s *Snapshot) Text() string {
	var b strings.Builder
	b.Grow(64 + 48*len(s.Elements) + len(s.VisibleText) + len(s.HTML))
	fmt.Fprintf(&b, "page: %s %s\n", strconv.Quote(s.Page.Title), s.Page.URL)
	v := s.Viewport
	fmt.Fprintf(&b, "viewport: %dx%d scroll %d,%d of %dx%d\n", px(v.Width), px(v.Height), px(v.ScrollX), px(v.ScrollY), px(v.ContentWidth), px(v.ContentHeight))
	for _, d := range s.Dialogs {
		answer := "dismissed"
		if d.Accepted {
			answer = "accepted"
		}
		fmt.Fprintf(&b, "js %s %s: %s\n", d.Type, strconv.Quote(truncate(d.Message, 200)), answer)
		if d.Omitted > 0 {
			fmt.Fprintf(&b, "js: %d more dialogs answered and not listed (the page opens dialogs in a loop)\n", d.Omitted)
		}
	}
	if len(s.Tabs) > 1 {
		b.WriteString("tabs:")
		for _, t := range s.Tabs {
			mark := ""
			if t.Active {
				mark = "*"
			}
			fmt.Fprintf(&b, " %s%s %s;", t.ID, mark, strconv.Quote(truncate(t.Title, 40)))
		}
		b.WriteByte('\n')
	}
	if s.Focused != "" {
		fmt.Fprintf(&b, "focus: %s\n", s.Focused)
	}
	if s.Degraded != "" {
		fmt.Fprintf(&b, "degraded: %s\n", s.Degraded)
	}

	dup := map[string]int{}
	for _, e := range s.Elements {
		dup[strings.ToLower(e.Role+"\x00"+e.Name)]++
	}
	// Elements outside the viewport follow under one marker rather than
	// each carrying the word.
	for _, offscreen := range []bool{false, true} {
		marked := false
		for _, e := range s.Elements {
			if hasState(e, "offscreen") != offscreen {
				continue
			}
			if offscreen && !marked {
				b.WriteString("offscreen (scroll to reach):\n")
				marked = true
			}
			s.writeElement(&b, e, dup[strings.ToLower(e.Role+"\x00"+e.Name)] > 1)
		}
	}

	shown := len(s.Elements)
	switch {
	case s.Remaining > 0:
		fmt.Fprintf(&b, "(%d of %d elements shown; %d more: ask with offset=%d or a filter)\n", shown, s.Total, s.Remaining, s.Offset+shown)
	case s.Offset > 0:
		fmt.Fprintf(&b, "(%d of %d elements shown, from offset %d)\n", shown, s.Total, s.Offset)
	case shown == 0 && s.Filter != "":
		fmt.Fprintf(&b, "(no element matches %s)\n", strconv.Quote(s.Filter))
	}
	if s.Covered > 0 {
		fmt.Fprintf(&b, "(%d elements hidden under an overlay)\n", s.Covered)
	}
	if s.VisibleText != "" {
		b.WriteString("visible text:\n")
		b.WriteString(s.VisibleText)
		b.WriteByte('\n')
	}
	if s.HTML != "" {
		b.WriteString("html:\n")
		b.WriteString(s.HTML)
		b.WriteByte('\n')
	}
	return b.String()
}

func (s *Snapshot) writeElement(b *strings.Builder, e Element, ambiguous bool) {
	b.WriteString(e.Ref)
	b.WriteByte(' ')
	if e.Role == "heading" && e.Level > 0 {
		fmt.Fprintf(b, "h%d", e.Level)
	} else {
		b.WriteString(e.Role)
	}
	switch {
	case e.Name != "":
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(e.Name))
	case e.Hint != "":
		b.WriteByte(' ')
		b.WriteString(e.Hint)
	}
	if e.Value != "" {
		b.WriteString(" = ")
		b.WriteString(strconv.Quote(e.Value))
	}
	if len(e.Options) > 0 {
		b.WriteString(" {")
		b.WriteString(strings.Join(e.Options, "|"))
		b.WriteByte('}')
	}
	if ambiguous && e.Context != "" {
		b.WriteString(" [")
		b.WriteString(e.Context)
		b.WriteByte(']')
	}
	if s.boxes {
		fmt.Fprintf(b, " (%d,%d %dx%d)", px(e.Box.X), px(e.Box.Y), px(e.Box.Width), px(e.Box.Height))
	}
	for _, st := range e.State {
		if st == "offscreen" {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(st)
	}
	b.WriteByte('\n')
}

func hasState(e Element, state string) bool {
	for _, s := range e.State {
		if s == state {
			return true
		}
	}
	return false
}

func px(v float64) int { return int(math.Round(v)) }

// visibleText is the text rendered in the viewport, in document order, a
// line break where the text moves to a new line, at most limit bytes.
func visibleText(docs []*domDoc, vp ViewportInfo, limit int) string {
	var b strings.Builder
	prevBottom := math.Inf(-1)
	full := false
	walkDocs(docs, func(d *domDoc, i int) {
		if full || d.nodeType[i] != nodeText || d.layout[i] < 0 {
			return
		}
		r, ok := d.box(i)
		if !ok || r.Width <= 0 || visibility(r, vp) == 2 {
			return
		}
		if p := d.parent[i]; p >= 0 && d.style(p, styleVisibility) == "hidden" {
			return
		}
		t := collapse(d.value[i])
		if t == "" {
			return
		}
		if b.Len() > 0 {
			// Text that starts below the previous piece is on a new line.
			if r.Y >= prevBottom-2 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		prevBottom = r.Y + r.Height
		b.WriteString(t)
		if b.Len() >= limit {
			full = true
		}
	})
	return truncate(b.String(), limit)
}

// htmlAttrs are the attributes an HTML snippet keeps: those that identify
// a control or say what it does.
var htmlAttrs = []string{"id", "name", "type", "role", "href", "aria-label", "placeholder", "title", "alt", "value", "class", "disabled", "checked", "required"}

// htmlSnippet renders the buttons, links, inputs, selects and textareas in
// the viewport as compact HTML (seed 003 AC-001.2), at most limit bytes.
// It is rebuilt from the capture, so it covers shadow roots and frames and
// never shows a password.
func htmlSnippet(docs []*domDoc, vp ViewportInfo, limit int) string {
	var b strings.Builder
	walkDocs(docs, func(d *domDoc, i int) {
		if b.Len() >= limit || !d.isElement(i) {
			return
		}
		tag := d.name[i]
		switch tag {
		case "BUTTON", "A", "INPUT", "SELECT", "TEXTAREA":
		default:
			return
		}
		if !d.rendered(i) {
			return
		}
		if r, ok := d.box(i); !ok || visibility(r, vp) == 2 {
			return
		}
		t, _ := d.attr(i, "type")
		if tag == "INPUT" && strings.EqualFold(t, "hidden") {
			return
		}
		lt := strings.ToLower(tag)
		b.WriteByte('<')
		b.WriteString(lt)
		for _, a := range htmlAttrs {
			v, ok := d.attr(i, a)
			if a == "value" && tag == "INPUT" {
				v, ok = d.inputValue[i], d.inputValue[i] != ""
				switch strings.ToLower(t) {
				case "password":
					v = "***"
				case "checkbox", "radio":
					ok = ok && v != "on"
				}
			}
			if a == "checked" {
				ok, v = d.checked[i], ""
			}
			if !ok {
				continue
			}
			b.WriteByte(' ')
			b.WriteString(a)
			if v != "" {
				b.WriteString(`="`)
				b.WriteString(escapeHTML(truncate(collapse(v), 60)))
				b.WriteByte('"')
			}
		}
		b.WriteByte('>')
		switch tag {
		case "INPUT":
			b.WriteByte('\n')
			return
		case "SELECT":
			n := 0
			d.eachOption(i, func(o int) {
				n++
				if n > 10 {
					return
				}
				if d.selected[o] {
					b.WriteString("<option selected>")
				} else {
					b.WriteString("<option>")
				}
				b.WriteString(escapeHTML(optionText(d, o)))
			})
		case "TEXTAREA":
			b.WriteString(escapeHTML(truncate(d.textValue[i], 80)))
		default:
			b.WriteString(escapeHTML(d.text(i, 80, nil)))
		}
		fmt.Fprintf(&b, "</%s>\n", lt)
	})
	return truncate(strings.TrimRight(b.String(), "\n"), limit)
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func escapeHTML(s string) string { return htmlEscaper.Replace(s) }
