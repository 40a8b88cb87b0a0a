package worker

import (
	"context"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// resolvePrompts replaces the prompt library references of run's model
// settings (prompt_ref) by the prompts they name, before the run's engine
// parameters are built.
func (w *Worker) resolvePrompts(ctx context.Context, run *wfv1.Run) error {
	_, _ = ctx, run // prompt_ref is refused at CreateRun until the prompt library lands
	return nil
}
