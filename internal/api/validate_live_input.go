package api

import (
	"fmt"
	"math"
	"unicode/utf8"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// Limits of the LiveService calls.
const (
	maxLiveFPS        = 30
	maxLiveEvents     = 200
	maxLiveCoordinate = 10000 // CSS px, for positions and wheel deltas
	maxLiveKeyLen     = 32    // KeyboardEvent.key and .code
	maxLiveTextLen    = 2000
	maxHandBackNote   = 2000
	maxClickCount     = 3
	maxModifiers      = 15 // Alt|Ctrl|Meta|Shift
)

func validateWatchLive(req *wfv1.WatchLiveRequest) error {
	var v fault.Violations
	if fps := req.GetMaxFps(); fps < 0 || fps > maxLiveFPS {
		v.Add("max_fps", "must be 0 (the default, 10) to %d", maxLiveFPS)
	}
	return v.Err()
}

func validateSendLiveInput(req *wfv1.SendLiveInputRequest) error {
	var v fault.Violations
	if req.GetTakeoverId() == "" {
		v.Add("takeover_id", "required")
	}
	evs := req.GetEvents()
	switch {
	case len(evs) == 0:
		v.Add("events", "at least one event is required")
	case len(evs) > maxLiveEvents:
		v.Add("events", "at most %d events a call", maxLiveEvents)
	}
	for i, ev := range evs {
		validateLiveEvent(&v, fmt.Sprintf("events[%d]", i), ev)
	}
	return v.Err()
}

func validateHandBack(req *wfv1.HandBackRequest) error {
	var v fault.Violations
	if req.GetTakeoverId() == "" {
		v.Add("takeover_id", "required")
	}
	if utf8.RuneCountInString(req.GetNote()) > maxHandBackNote {
		v.Add("note", "at most %d characters", maxHandBackNote)
	}
	if !utf8.ValidString(req.GetNote()) {
		v.Add("note", "not valid UTF-8")
	}
	return v.Err()
}

func validateLiveEvent(v *fault.Violations, field string, ev *wfv1.LiveInput) {
	switch e := ev.GetEvent().(type) {
	case *wfv1.LiveInput_Mouse:
		m := e.Mouse
		f := field + ".mouse"
		if m.GetType() == wfv1.MouseInput_TYPE_UNSPECIFIED || wfv1.MouseInput_Type_name[int32(m.GetType())] == "" {
			v.Add(f+".type", "one of TYPE_MOVE, TYPE_DOWN, TYPE_UP, TYPE_WHEEL is required")
		}
		if wfv1.MouseInput_Button_name[int32(m.GetButton())] == "" {
			v.Add(f+".button", "unknown button %d", m.GetButton())
		}
		coordinate(v, f+".x", m.GetX(), 0)
		coordinate(v, f+".y", m.GetY(), 0)
		coordinate(v, f+".delta_x", m.GetDeltaX(), -maxLiveCoordinate)
		coordinate(v, f+".delta_y", m.GetDeltaY(), -maxLiveCoordinate)
		if c := m.GetClickCount(); c < 0 || c > maxClickCount {
			v.Add(f+".click_count", "must be 0 to %d", maxClickCount)
		}
		modifiers(v, f+".modifiers", m.GetModifiers())
	case *wfv1.LiveInput_Key:
		k := e.Key
		f := field + ".key"
		if k.GetType() == wfv1.KeyInput_TYPE_UNSPECIFIED || wfv1.KeyInput_Type_name[int32(k.GetType())] == "" {
			v.Add(f+".type", "one of TYPE_DOWN, TYPE_UP is required")
		}
		if k.GetKey() == "" && k.GetCode() == "" {
			v.Add(f+".key", "key or code is required")
		}
		for _, kv := range [...]struct{ name, s string }{{"key", k.GetKey()}, {"code", k.GetCode()}} {
			if utf8.RuneCountInString(kv.s) > maxLiveKeyLen || !utf8.ValidString(kv.s) {
				v.Add(f+"."+kv.name, "at most %d characters of valid UTF-8", maxLiveKeyLen)
			}
		}
		modifiers(v, f+".modifiers", k.GetModifiers())
	case *wfv1.LiveInput_Text:
		switch n := utf8.RuneCountInString(e.Text); {
		case n == 0:
			v.Add(field+".text", "must not be empty")
		case n > maxLiveTextLen || !utf8.ValidString(e.Text):
			v.Add(field+".text", "at most %d characters of valid UTF-8", maxLiveTextLen)
		}
	default:
		v.Add(field, "one of mouse, key or text is required")
	}
}

// coordinate checks that x is finite and within lo..maxLiveCoordinate.
func coordinate(v *fault.Violations, field string, x, lo float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < lo || x > maxLiveCoordinate {
		v.Add(field, "must be a finite number from %g to %d", lo, maxLiveCoordinate)
	}
}

func modifiers(v *fault.Violations, field string, m int32) {
	if m < 0 || m > maxModifiers {
		v.Add(field, "a bit field of Alt=1, Ctrl=2, Meta=4, Shift=8 (0 to %d)", maxModifiers)
	}
}
