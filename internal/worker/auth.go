package worker

import (
	"context"

	"github.com/wayfinder/wayfinder/internal/runner"
)

// authHooks applies the run's auth bindings.
func (w *Worker) authHooks(ctx context.Context, env *runEnv) (runner.Hooks, error) {
	return nil, nil
}
