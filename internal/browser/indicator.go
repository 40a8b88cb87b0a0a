package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// IndicatorTimeout bounds one evaluation of a page indicator (an element,
// a text, a script).
const IndicatorTimeout = 2 * time.Second

// jsElementPresent reports whether a visible element (in the document or an
// open shadow root) matches the selector; an invalid selector throws.
var jsElementPresent = jsFn(`function(sel) { return deepAll(document, sel).some(visible); }`)

// jsTextPresent reports whether the page's visible text contains the text
// (case-insensitive, whitespace collapsed).
var jsTextPresent = jsFn(`function(text) { return pageText().includes(norm(text)); }`)

// ElementPresent reports whether a visible element of the page matches the
// CSS selector. An invalid selector is an error.
func (pg *Page) ElementPresent(ctx context.Context, selector string) (bool, error) {
	return pg.evalBool(ctx, jsElementPresent, selector)
}

// TextPresent reports whether the page's visible text contains text,
// ignoring case and runs of whitespace.
func (pg *Page) TextPresent(ctx context.Context, text string) (bool, error) {
	return pg.evalBool(ctx, jsTextPresent, text)
}

// Truthy evaluates the JavaScript expression expr in the page's main world
// (with the page's own globals and privileges), awaits it when it is a
// promise, and reports whether the result is truthy. The evaluation is
// bounded by IndicatorTimeout; a script that throws or runs too long is an
// error.
func (pg *Page) Truthy(ctx context.Context, expr string) (bool, error) {
	// The expression stands alone on its lines so that a trailing line
	// comment cannot swallow the wrapper.
	return pg.evaluate(ctx, "(async () => !!(await (\n"+expr+"\n)))()")
}

func (pg *Page) evalBool(ctx context.Context, fn string, arg string) (bool, error) {
	args, err := json.Marshal([]string{arg})
	if err != nil {
		return false, err
	}
	return pg.evaluate(ctx, "("+fn+").apply(undefined, "+string(args)+")")
}

// evaluate runs expr, which must yield a boolean, in the main world of the
// page's main frame.
func (pg *Page) evaluate(ctx context.Context, expr string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, IndicatorTimeout)
	defer cancel()
	r, err := proto.RuntimeEvaluate{Expression: expr, AwaitPromise: true, ReturnByValue: true,
		Timeout: proto.RuntimeTimeDelta(IndicatorTimeout.Milliseconds())}.Call(pg.p.Context(ctx))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return false, fmt.Errorf("no result within %s", IndicatorTimeout)
		}
		return false, classify(err)
	}
	if r.ExceptionDetails != nil {
		return false, fmt.Errorf("page script failed: %s", exceptionText(r.ExceptionDetails))
	}
	var ok bool
	if err := json.Unmarshal([]byte(r.Result.Value.JSON("", "")), &ok); err != nil {
		return false, fmt.Errorf("page script result: %w", err)
	}
	return ok, nil
}
