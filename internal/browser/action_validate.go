package browser

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// maxWaitDuration bounds a wait for a plain duration.
const maxWaitDuration = time.Minute

// actionFields lists, per kind, the Action fields it accepts beyond Kind,
// Timeout and Dialog.
var actionFields = map[ActionKind][]string{
	ActionClick:       {"element"},
	ActionDoubleClick: {"element"},
	ActionRightClick:  {"element"},
	ActionHover:       {"element"},
	ActionFill:        {"element", "value"},
	ActionType:        {"element", "value"},
	ActionPress:       {"element", "keys"},
	ActionSelect:      {"element", "value", "values"},
	ActionCheck:       {"element"},
	ActionUncheck:     {"element"},
	ActionScroll:      {"element", "direction", "amount"},
	ActionNavigate:    {"url"},
	ActionBack:        {},
	ActionForward:     {},
	ActionReload:      {},
	ActionWait:        {"element", "text", "navigation", "network_idle", "duration"},
	ActionDrag:        {"element", "to"},
	ActionUpload:      {"element", "files"},
	ActionSwitchTab:   {"tab"},
	ActionCloseTab:    {"tab"},
	ActionExtract:     {"extract"},
	ActionGetCookies:  {"url"},
	ActionSetCookies:  {"cookies"},
	ActionScreenshot:  {"full_page", "format", "quality"},
}

// present lists the fields a sets.
func (a Action) present() []string {
	var f []string
	add := func(ok bool, name string) {
		if ok {
			f = append(f, name)
		}
	}
	add(a.Ref != "" || a.Target != nil || a.SnapshotID != "", "element")
	add(a.ToRef != "" || a.ToTarget != nil, "to")
	add(a.Value != "", "value")
	add(len(a.Values) > 0, "values")
	add(a.Keys != "", "keys")
	add(a.URL != "", "url")
	add(a.Direction != "", "direction")
	add(a.Amount != 0, "amount")
	add(a.Text != "", "text")
	add(a.Navigation, "navigation")
	add(a.NetworkIdle, "network_idle")
	add(a.Duration != 0, "duration")
	add(len(a.Files) > 0, "files")
	add(a.Tab != "", "tab")
	add(a.Extract != nil, "extract")
	add(len(a.Cookies) > 0, "cookies")
	add(a.FullPage, "full_page")
	add(a.Format != "", "format")
	add(a.Quality != 0, "quality")
	return f
}

// validate refuses missing or conflicting fields as invalid_params.
func (a Action) validate() error {
	allowed, ok := actionFields[a.Kind]
	if !ok {
		kinds := make([]string, 0, len(actionFields))
		for k := range actionFields {
			kinds = append(kinds, string(k))
		}
		sort.Strings(kinds)
		return fail(CodeInvalidParams, "unknown action kind %q (one of %s)", a.Kind, strings.Join(kinds, ", "))
	}
	var extra []string
	for _, f := range a.present() {
		if !slices.Contains(allowed, f) {
			extra = append(extra, f)
		}
	}
	if len(extra) > 0 {
		return fail(CodeInvalidParams, "%s does not take %s", a.Kind, strings.Join(extra, ", "))
	}
	if a.Timeout < 0 {
		return fail(CodeInvalidParams, "timeout must not be negative")
	}
	if a.Ref != "" && a.Target != nil {
		return fail(CodeInvalidParams, "give ref or target, not both")
	}
	if a.ToRef != "" && a.ToTarget != nil {
		return fail(CodeInvalidParams, "give to_ref or to_target, not both")
	}
	if a.SnapshotID != "" && a.Ref == "" {
		return fail(CodeInvalidParams, "snapshot_id needs a ref")
	}
	if a.Target != nil {
		if err := a.Target.validate(); err != nil {
			return err
		}
	}
	if a.ToTarget != nil {
		if err := a.ToTarget.validate(); err != nil {
			return err
		}
	}
	hasElement := a.Ref != "" || a.Target != nil
	switch a.Kind {
	case ActionClick, ActionDoubleClick, ActionRightClick, ActionHover, ActionFill,
		ActionSelect, ActionCheck, ActionUncheck, ActionUpload:
		if !hasElement {
			return fail(CodeInvalidParams, "%s needs a ref or a target", a.Kind)
		}
	}
	switch a.Kind {
	case ActionDrag:
		if !hasElement || (a.ToRef == "" && a.ToTarget == nil) {
			return fail(CodeInvalidParams, "drag needs a source (ref or target) and a destination (to_ref or to_target)")
		}
	case ActionPress:
		if a.Keys == "" {
			return fail(CodeInvalidParams, "press needs keys, such as \"Enter\" or \"Control+A\"")
		}
		if _, err := parseKeys(a.Keys); err != nil {
			return err
		}
	case ActionType:
		if a.Value == "" {
			return fail(CodeInvalidParams, "type needs a value")
		}
	case ActionSelect:
		if a.Value != "" && len(a.Values) > 0 {
			return fail(CodeInvalidParams, "give value or values, not both")
		}
		if a.Value == "" && len(a.Values) == 0 {
			return fail(CodeInvalidParams, "select needs the option's value or text")
		}
	case ActionScroll:
		if !hasElement && a.Direction == "" {
			return fail(CodeInvalidParams, "scroll needs a ref or target to scroll into view, or a direction (up, down, left, right, top, bottom)")
		}
		switch a.Direction {
		case "", "up", "down", "left", "right", "top", "bottom":
		default:
			return fail(CodeInvalidParams, "unknown scroll direction %q (up, down, left, right, top, bottom)", a.Direction)
		}
		if a.Amount < 0 {
			return fail(CodeInvalidParams, "amount must be a positive number of pixels")
		}
		if a.Amount != 0 && (a.Direction == "" || a.Direction == "top" || a.Direction == "bottom") {
			return fail(CodeInvalidParams, "amount applies to up, down, left and right only")
		}
	case ActionNavigate:
		if a.URL == "" {
			return fail(CodeInvalidParams, "navigate needs a url")
		}
	case ActionWait:
		n := 0
		for _, set := range []bool{hasElement, a.Text != "", a.Navigation, a.NetworkIdle, a.Duration != 0} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fail(CodeInvalidParams, "wait needs exactly one of: text, ref or target, navigation, network_idle, duration")
		}
		if a.Duration < 0 || a.Duration > maxWaitDuration {
			return fail(CodeInvalidParams, "duration must be between 0 and %s", maxWaitDuration)
		}
	case ActionUpload:
		if len(a.Files) == 0 {
			return fail(CodeInvalidParams, "upload needs files")
		}
	case ActionScreenshot:
		switch strings.ToLower(a.Format) {
		case "", FormatPNG, FormatJPEG, "jpg":
		default:
			return fail(CodeInvalidParams, "unknown image format %q (png or jpeg)", a.Format)
		}
		if a.Quality < 0 || a.Quality > 100 {
			return fail(CodeInvalidParams, "quality must be between 1 and 100")
		}
	case ActionSwitchTab:
		if a.Tab == "" {
			return fail(CodeInvalidParams, "switch_tab needs a tab id")
		}
	case ActionExtract:
		if err := a.Extract.validate(); err != nil {
			return err
		}
	case ActionSetCookies:
		if len(a.Cookies) == 0 {
			return fail(CodeInvalidParams, "set_cookies needs cookies")
		}
		for i, c := range a.Cookies {
			if c.Name == "" {
				return fail(CodeInvalidParams, "cookie %d has no name", i)
			}
			if c.URL == "" && c.Domain == "" {
				return fail(CodeInvalidParams, "cookie %q needs a url or a domain", c.Name)
			}
		}
	}
	return nil
}
