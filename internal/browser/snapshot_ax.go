package browser

import (
	"fmt"
	"strconv"

	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// axNode is what a snapshot keeps of one accessibility node.
type axNode struct {
	role    string
	name    string
	value   string
	ignored bool
	// ariaHidden: ignored only because it or an ancestor is aria-hidden,
	// which pages get wrong (a focusable control inside stays reachable).
	ariaHidden bool
	focused    bool
	disabled   bool
	checked    string // "true", "false", "mixed" or ""
	pressed    string // same
	expanded   string // "true", "false" or ""
	selected   bool
	required   bool
	readonly   bool
	invalid    bool
	busy       bool
	modal      bool
	level      int
}

// axIndex maps backend node IDs of one frame to their accessibility nodes.
type axIndex map[proto.DOMBackendNodeID]*axNode

// newAXIndex indexes the nodes of Accessibility.getFullAXTree.
func newAXIndex(nodes []*proto.AccessibilityAXNode) axIndex {
	idx := make(axIndex, len(nodes))
	for _, n := range nodes {
		if n.BackendDOMNodeID == 0 {
			continue
		}
		a := &axNode{ignored: n.Ignored, role: axString(n.Role), name: axString(n.Name), value: axString(n.Value)}
		for _, r := range n.IgnoredReasons {
			switch r.Name {
			case "ariaHiddenElement", "ariaHiddenSubtree":
				a.ariaHidden = true
			}
		}
		for _, p := range n.Properties {
			v := axString(p.Value)
			switch p.Name {
			case "focused":
				a.focused = v == "true"
			case "disabled":
				a.disabled = v == "true"
			case "checked":
				a.checked = v
			case "pressed":
				a.pressed = v
			case "expanded":
				a.expanded = v
			case "selected":
				a.selected = v == "true"
			case "required":
				a.required = v == "true"
			case "readonly":
				a.readonly = v == "true"
			case "invalid":
				a.invalid = v != "" && v != "false"
			case "busy":
				a.busy = v == "true"
			case "modal":
				a.modal = v == "true"
			case "level":
				a.level, _ = strconv.Atoi(v)
			}
		}
		idx[n.BackendDOMNodeID] = a
	}
	return idx
}

// axString renders an AX value (string, boolean, tristate or number) as a
// string, "" when absent.
func axString(v *proto.AccessibilityAXValue) string {
	if v == nil {
		return ""
	}
	return jsonString(v.Value)
}

func jsonString(j gson.JSON) string {
	switch x := j.Val().(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

// applyAX refines a listed candidate with its accessibility node: the
// accessible name, the states, and the role when the tree gives a
// meaningful one. An ignored node (a control under a wrong aria-hidden)
// keeps its DOM description, and so does a label standing in for its
// hidden control.
func applyAX(c *candidate, a *axNode) {
	if a == nil || a.ignored || c.standIn {
		return
	}
	if r := a.role; interactiveRoles[r] || landmarkRoles[r] || r == "heading" {
		c.role = r
	}
	if c.role == "heading" && a.level > 0 {
		c.level = a.level
	}
	if n := collapse(a.name); n != "" {
		c.name = truncate(n, 200)
		c.hint = ""
	}
	if c.value == "" && c.doc.name[c.node] != "INPUT" && (c.role == "textbox" || c.role == "searchbox" || c.role == "combobox") {
		c.value = truncate(collapse(a.value), 100)
	}
	var keep []string
	for _, s := range c.states {
		switch s {
		case "offscreen", "covered", "filled":
			keep = append(keep, s)
		}
	}
	c.states = nil
	axStates(c, a)
	c.states = append(c.states, keep...)
	if a.focused {
		c.focused = true
	}
}
