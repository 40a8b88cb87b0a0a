package trace

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// Fingerprint describes one element well enough to find it again in a
// later snapshot of the same (or a changed) page. It is stored with a
// trace, so its JSON field names are part of the stored format. It never
// holds a form value: ValueKind says what kind of value the element takes.
type Fingerprint struct {
	// Ref is the element's ref in the snapshot it was captured from; on an
	// unchanged page the same ref names the same element, so Match prefers
	// it between equal scores.
	Ref string `json:"ref,omitempty"`
	// Role and Name are the ARIA role and accessible name of the snapshot.
	Role string `json:"role"`
	Name string `json:"name,omitempty"`
	// Level is a heading's level.
	Level int `json:"level,omitempty"`
	// Text is the element's visible text (browser.ElementDetails.Text).
	Text string `json:"text,omitempty"`
	// Tag, Attrs and Path are the DOM's description
	// (browser.ElementDetails); empty when captured without details.
	Tag   string            `json:"tag,omitempty"`
	Attrs map[string]string `json:"attrs,omitempty"`
	Path  string            `json:"path,omitempty"`
	// Context is the snapshot's surroundings of the element (row, list
	// item, fieldset legend, section heading).
	Context string `json:"context,omitempty"`
	// Before and After are the nearest listed elements before and after
	// it in document order, nearest first, at most 2 each.
	Before []Neighbour `json:"before,omitempty"`
	After  []Neighbour `json:"after,omitempty"`
	// Box is the element's border box in document coordinates (the
	// snapshot's viewport box plus the scroll offset), seen in a viewport
	// of Viewport's size.
	Box      browser.Rect `json:"box"`
	Viewport Size         `json:"viewport"`
	// ValueKind is the kind of value the element takes: "" (none), an
	// input's type ("text", "email", "password", "number", ...), "choice"
	// (select, listbox, combobox with options) or "toggle" (checkbox,
	// radio, switch).
	ValueKind string `json:"value_kind,omitempty"`
}

// Neighbour is a nearby element of a fingerprint, by role and name.
type Neighbour struct {
	Role string `json:"role"`
	Name string `json:"name,omitempty"`
}

// Size is a width and height in CSS pixels.
type Size struct {
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// maxNeighbours is how many neighbours a fingerprint keeps on each side.
const maxNeighbours = 2

// ErrNotInSnapshot: the ref is not an element of the snapshot.
var ErrNotInSnapshot = errors.New("ref not in snapshot")

// Capture fingerprints the element of ref in snap, with d its details
// (from browser.Page.ElementDetails; the zero value when they could not be
// read, which leaves the DOM features out). Errors wrap ErrNotInSnapshot.
func Capture(snap *browser.Snapshot, ref string, d browser.ElementDetails) (Fingerprint, error) {
	i := slices.IndexFunc(snap.Elements, func(e browser.Element) bool { return e.Ref == ref })
	if i < 0 {
		return Fingerprint{}, fmt.Errorf("%w: %s is not in snapshot %s", ErrNotInSnapshot, ref, snap.ID)
	}
	e := snap.Elements[i]
	before, after := neighbours(snap.Elements, i)
	return Fingerprint{
		Ref: e.Ref, Role: e.Role, Name: e.Name, Level: e.Level,
		Text: d.Text, Tag: d.Tag, Attrs: cloneAttrs(d.Attrs), Path: d.Path,
		Context:   e.Context,
		Before:    before,
		After:     after,
		Box:       docBox(snap, e.Box),
		Viewport:  Size{Width: snap.Viewport.Width, Height: snap.Viewport.Height},
		ValueKind: valueKind(e, d),
	}, nil
}

// neighbours are the elements around els[i], nearest first.
func neighbours(els []browser.Element, i int) (before, after []Neighbour) {
	for k := i - 1; k >= 0 && len(before) < maxNeighbours; k-- {
		before = append(before, Neighbour{Role: els[k].Role, Name: els[k].Name})
	}
	for k := i + 1; k < len(els) && len(after) < maxNeighbours; k++ {
		after = append(after, Neighbour{Role: els[k].Role, Name: els[k].Name})
	}
	return before, after
}

// docBox moves a viewport box into document coordinates.
func docBox(snap *browser.Snapshot, r browser.Rect) browser.Rect {
	r.X += snap.Viewport.ScrollX
	r.Y += snap.Viewport.ScrollY
	return r
}

func cloneAttrs(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// valueKind says what kind of value e takes (see Fingerprint.ValueKind).
func valueKind(e browser.Element, d browser.ElementDetails) string {
	switch e.Role {
	case "checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio":
		return "toggle"
	case "listbox":
		return "choice"
	case "combobox":
		if len(e.Options) > 0 || d.Tag == "select" {
			return "choice"
		}
		return "text"
	case "textbox", "searchbox", "spinbutton":
		if t := d.Attrs["type"]; t != "" && d.Tag == "input" {
			return t
		}
		if e.Role == "spinbutton" {
			return "number"
		}
		if slices.Contains(e.State, "filled") {
			return "password" // only passwords are marked filled
		}
		return "text"
	case "slider":
		return "range"
	}
	return ""
}
