package browser

import (
	"context"
	"fmt"

	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// ActionEval evaluates the JavaScript expression expr in the page (awaiting
// promises) and returns its value (tests only).
func ActionEval(ctx context.Context, pg *Page, expr string) (gson.JSON, error) {
	r, err := proto.RuntimeEvaluate{Expression: expr, AwaitPromise: true, ReturnByValue: true}.Call(pg.p.Context(ctx))
	if err != nil {
		return gson.JSON{}, err
	}
	if r.ExceptionDetails != nil {
		return gson.JSON{}, fmt.Errorf("eval %s: %s", expr, exceptionText(r.ExceptionDetails))
	}
	return r.Result.Value, nil
}
