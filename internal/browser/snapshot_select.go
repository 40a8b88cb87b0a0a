package browser

import (
	"sort"
	"strconv"
	"strings"
)

// sortByPriority orders candidates by seed 002 §1.3.3: viewport visibility,
// then role, then document order.
func sortByPriority(cs []*candidate) {
	sort.SliceStable(cs, func(a, b int) bool {
		x, y := cs[a], cs[b]
		if x.focused != y.focused {
			return x.focused
		}
		if x.vis != y.vis {
			return x.vis < y.vis
		}
		if rx, ry := rolePriority(x.role), rolePriority(y.role); rx != ry {
			return rx < ry
		}
		return x.ordinal < y.ordinal
	})
}

func rolePriority(role string) int {
	switch role {
	case "button", "link":
		return 0
	case "checkbox", "radio", "textbox", "searchbox", "spinbutton", "switch", "slider":
		return 1
	case "combobox", "listbox":
		return 2
	case "heading":
		return 3
	case "region", "dialog", "alertdialog", "alert":
		return 4
	}
	return 5
}

// choose numbers the qualifying candidates, applies the filter and picks
// the page of elements by priority (the focused element first), in
// document order; it fills snap's counts.
func (b *builder) choose(snap *Snapshot, focused func(*candidate) bool) []*candidate {
	var qual []*candidate
	for _, c := range b.cands {
		if c.covered {
			if !b.opts.IncludeCovered {
				snap.Covered++
				continue
			}
			c.states = append(c.states, "covered")
		}
		c.focused = focused(c)
		c.ordinal = len(qual)
		qual = append(qual, c)
	}
	if terms := strings.Fields(strings.ToLower(b.opts.Filter)); len(terms) > 0 {
		kept := qual[:0:0]
		for _, c := range qual {
			hay := strings.ToLower(c.role + " " + c.name + " " + c.value + " " + b.contextOf(c) + " " + c.hint)
			all := true
			for _, t := range terms {
				if !strings.Contains(hay, t) {
					all = false
					break
				}
			}
			if all {
				kept = append(kept, c)
			}
		}
		qual = kept
	}
	ranked := append([]*candidate(nil), qual...)
	sortByPriority(ranked)
	lo := min(b.opts.Offset, len(ranked))
	hi := min(lo+b.opts.MaxElements, len(ranked))
	page := ranked[lo:hi]
	sort.Slice(page, func(x, y int) bool { return page[x].ordinal < page[y].ordinal })
	snap.Total, snap.Offset, snap.Remaining = len(qual), lo, len(ranked)-hi
	return page
}

// fill lists page in snap and returns the refs to store.
func (b *builder) fill(snap *Snapshot, page []*candidate) []NodeRef {
	snap.Elements = make([]Element, 0, len(page))
	refs := make([]NodeRef, 0, len(page))
	for _, c := range page {
		ref := "@e" + strconv.Itoa(c.ordinal)
		ctx := b.contextOf(c)
		if c.focused {
			snap.Focused = ref
			c.states = append(c.states, "focused")
		}
		snap.Elements = append(snap.Elements, Element{
			Ref: ref, Role: c.role, Name: c.name, State: c.states, Box: round(c.box),
			Value: c.value, Options: c.options, Level: c.level, Context: ctx, Hint: c.hint, URL: c.href,
		})
		refs = append(refs, NodeRef{
			Ref: ref, BackendNodeID: c.doc.backend[c.node], FrameID: c.doc.frameID,
			Role: c.role, Name: c.name, Context: ctx, Box: c.box,
		})
	}
	return refs
}

func round(r Rect) Rect {
	f := func(v float64) float64 { return float64(int64(v*10+0.5*sign(v))) / 10 }
	return Rect{X: f(r.X), Y: f(r.Y), Width: f(r.Width), Height: f(r.Height)}
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}
