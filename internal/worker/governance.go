package worker

import (
	"context"

	"github.com/wayfinder/wayfinder/internal/runner"
)

// governanceHooks applies the run's governance rules.
func (w *Worker) governanceHooks(ctx context.Context, env *runEnv) (runner.Hooks, error) {
	return nil, nil
}
