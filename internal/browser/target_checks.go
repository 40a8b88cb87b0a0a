package browser

import (
	"context"
	"fmt"
	"math"

	"github.com/go-rod/rod/lib/proto"
)

// elementState is what the pre-checks know about an element (jsState).
type elementState struct {
	Connected    bool   `json:"connected"`
	Hidden       string `json:"hidden"`
	Tag          string `json:"tag"`
	Type         string `json:"type"`
	Role         string `json:"role"`
	Kind         string `json:"kind"`
	Checked      *bool  `json:"checked"`
	Disabled     bool   `json:"disabled"`
	Readonly     bool   `json:"readonly"`
	Multiple     bool   `json:"multiple"`
	Editable     bool   `json:"editable"`
	LabelVisible bool   `json:"labelVisible"`
	Desc         string `json:"desc"`
}

// state reads the element's state; an element that left the page is an
// action_failed error.
func (el *element) state(ctx context.Context) (elementState, error) {
	var st elementState
	if err := el.call(ctx, jsState, &st); err != nil {
		return st, err
	}
	if !st.Connected {
		return st, fail(CodeActionFailed, "%s left the page before it could be used", el.desc)
	}
	if st.Desc != "" {
		el.desc = st.Desc
	}
	return st, nil
}

// checkVisible fails with element_not_visible when the element is hidden.
func (el *element) checkVisible(st elementState) error {
	if st.Hidden != "" {
		return &ActionError{Code: CodeElementNotVisible, Message: fmt.Sprintf("%s is not visible: %s", el.desc, st.Hidden)}
	}
	return nil
}

// maxStabilityFrames bounds how long actionPoint waits for a moving element
// (an animation) to come to rest.
const maxStabilityFrames = 20

// actionPoint runs the pre-checks of a pointer action and returns the
// viewport point to act at: the element must be in the page, visible,
// enabled (when requireEnabled), scrolled into view, at rest, and the
// topmost element at that point (else element_obscured names what covers
// it).
func (pg *Page) actionPoint(ctx context.Context, el *element, requireEnabled bool) (proto.Point, error) {
	if el.point != nil {
		return *el.point, nil
	}
	st, err := el.state(ctx)
	if err != nil {
		return proto.Point{}, err
	}
	if err := el.checkVisible(st); err != nil {
		return proto.Point{}, err
	}
	if requireEnabled && st.Disabled {
		return proto.Point{}, fail(CodeElementDisabled, "%s is disabled", el.desc)
	}
	sess := el.sess.Context(ctx)
	if err := (proto.DOMScrollIntoViewIfNeeded{ObjectID: el.obj}).Call(sess); err != nil {
		return proto.Point{}, fail(CodeElementNotVisible, "%s cannot be scrolled into view: %v", el.desc, err)
	}
	for i := 0; i < maxStabilityFrames; i++ {
		var moving bool
		if err := el.call(ctx, jsMoving, &moving); err != nil {
			return proto.Point{}, err
		}
		if !moving {
			break
		}
	}
	pt, err := pg.visiblePoint(ctx, el)
	if err != nil {
		return proto.Point{}, err
	}
	if err := pg.hitTest(ctx, el, pt); err != nil {
		return proto.Point{}, err
	}
	return pt, nil
}

// visiblePoint returns the centre of the part of the element's first
// non-empty box that lies in the viewport.
func (pg *Page) visiblePoint(ctx context.Context, el *element) (proto.Point, error) {
	q, err := proto.DOMGetContentQuads{ObjectID: el.obj}.Call(el.sess.Context(ctx))
	if err != nil {
		return proto.Point{}, fail(CodeElementNotVisible, "%s has no box on screen", el.desc)
	}
	vw, vh, err := pg.viewport(ctx)
	if err != nil {
		return proto.Point{}, err
	}
	for _, quad := range q.Quads {
		if quad.Len() != 4 || quad.Area() < 1 {
			continue
		}
		x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
		quad.Each(func(p proto.Point, _ int) {
			x0, y0, x1, y1 = math.Min(x0, p.X), math.Min(y0, p.Y), math.Max(x1, p.X), math.Max(y1, p.Y)
		})
		x0, y0, x1, y1 = math.Max(x0, 0), math.Max(y0, 0), math.Min(x1, vw), math.Min(y1, vh)
		if x1-x0 >= 1 && y1-y0 >= 1 {
			return proto.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, nil
		}
	}
	return proto.Point{}, fail(CodeElementNotVisible, "%s is outside the viewport and could not be scrolled into it", el.desc)
}

// hitTest fails with element_obscured when the element is not what a click
// at pt would hit.
func (pg *Page) hitTest(ctx context.Context, el *element, pt proto.Point) error {
	sess := el.sess.Context(ctx)
	// DOM.getNodeForLocation takes document coordinates.
	m, err := proto.PageGetLayoutMetrics{}.Call(pg.p.Context(ctx))
	if err != nil {
		return classify(fmt.Errorf("layout metrics: %w", err))
	}
	x, y := pt.X+float64(m.CSSLayoutViewport.PageX), pt.Y+float64(m.CSSLayoutViewport.PageY)
	hit, err := proto.DOMGetNodeForLocation{X: int(math.Round(x)), Y: int(math.Round(y)), IgnorePointerEventsNone: true}.Call(sess)
	if err != nil {
		return fail(CodeElementObscured, "nothing can be hit at (%.0f, %.0f) where %s is: %v", pt.X, pt.Y, el.desc, err)
	}
	rn, err := proto.DOMResolveNode{BackendNodeID: hit.BackendNodeID}.Call(sess)
	if err != nil {
		return fmt.Errorf("resolve the node at (%.0f, %.0f): %w", pt.X, pt.Y, err)
	}
	defer release(ctx, el.sess, rn.Object.ObjectID)
	var r struct {
		OK       bool   `json:"ok"`
		Covering string `json:"covering"`
	}
	if err := el.call(ctx, jsHit, &r, rn.Object.ObjectID); err != nil {
		// The node hit lives in another frame than the element: whatever
		// it is, it covers the element.
		if ctx.Err() != nil {
			return err
		}
		_ = callOn(ctx, el.sess, rn.Object.ObjectID, jsDescribe, &r.Covering)
	} else if r.OK {
		return nil
	}
	return &ActionError{
		Code:     CodeElementObscured,
		Message:  fmt.Sprintf("%s is covered by %s at (%.0f, %.0f); close or scroll past it first", el.desc, r.Covering, pt.X, pt.Y),
		Covering: r.Covering,
	}
}
