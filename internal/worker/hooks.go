package worker

import (
	"context"
	"log/slog"
	"sync/atomic"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
)

// runEnv is what a run's rules (auth, governance) are built from and act
// through.
type runEnv struct {
	// run is the run with its params unsealed (secrets included).
	run    *wfv1.Run
	tenant string
	b      *leasedBrowser
	store  *store.Store
	log    *slog.Logger
	// atEnd are called, in order, when the engine has returned and before
	// the browser context is released (while it is still alive, unless it
	// crashed).
	atEnd []func(ctx context.Context)
	// secrets are the form-login values the model may use by placeholder
	// (runner.Params.Secrets).
	secrets []runner.Secret
	// redact are further secret values (header tokens, cookie values,
	// client secrets) that must never be shown or recorded even if a page
	// echoes them.
	redact []string
	// redactor is the run's redactor once the run starts; secrets learnt
	// on the way (acquired OAuth tokens) are added to it (learn).
	redactor *atomic.Pointer[runner.Redactor]
}

// learn adds secret values learnt while the run goes to its redaction.
func (e *runEnv) learn(values ...string) {
	if e.redactor != nil {
		e.redactor.Load().Add(values...)
	}
}

// event appends a run event; failures are logged, never fatal.
func (e *runEnv) event(ctx context.Context, ev *wfv1.RunEvent) {
	if _, err := e.store.AppendEvent(context.WithoutCancel(ctx), e.run.GetId(), ev); err != nil {
		e.log.WarnContext(ctx, "recording run event", "type", ev.GetType().String(), "error", err)
	}
}

// audit records an audit event of the run's tenant; failures are logged.
func (e *runEnv) audit(ctx context.Context, a store.Audit) {
	a.Tenant, a.RunID = e.tenant, e.run.GetId()
	if a.Actor == "" {
		a.Actor = "run:" + e.run.GetId()
	}
	if err := e.store.RecordAudit(context.WithoutCancel(ctx), a); err != nil {
		e.log.WarnContext(ctx, "recording audit event", "kind", a.Kind, "error", err)
	}
}

// hooks builds the run's auth and governance rules: network rules and
// session setup on env.b, and the runner hooks. A *runner.Error ends the
// run before it starts.
func (w *Worker) hooks(ctx context.Context, env *runEnv) (runner.Hooks, error) {
	auth, err := w.authHooks(ctx, env)
	if err != nil {
		return nil, err
	}
	gov, err := w.governanceHooks(ctx, env)
	if err != nil {
		return nil, err
	}
	// Governance first: a robots.txt or rate refusal comes before any
	// login, and a consent banner is cleared before a login script clicks.
	return runner.JoinHooks(gov, auth), nil
}
