package browser

import (
	"context"
	"fmt"

	"github.com/go-rod/rod"
)

// NetworkEvalByUser evaluates the function expression js in pg's top frame
// as a user gesture (so window.open opens a popup) and returns its value as
// a string (tests only).
func NetworkEvalByUser(ctx context.Context, pg *Page, js string, args ...any) (string, error) {
	res, err := pg.p.Context(ctx).Evaluate(rod.Eval(js, args...).ByUser().ByPromise())
	if err != nil {
		return "", fmt.Errorf("eval: %w", err)
	}
	return res.Value.String(), nil
}
