package worker

import (
	"context"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// resolveTools replaces the run's tools that name the tool catalog
// (catalog_ref) by their stored definitions, before the run's engine
// parameters are built.
func (w *Worker) resolveTools(ctx context.Context, run *wfv1.Run) error {
	_, _ = ctx, run // catalog_ref and mcp tools are refused at CreateRun until the catalog lands
	return nil
}
