// Package api implements Wayfinder's gRPC services (and, through
// grpc-gateway, its REST API): request validation, the run lifecycle calls
// and event streaming. Errors are returned as plain Go errors of the fault
// vocabulary and turned into statuses by the interceptors in status.go.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// Queue is what the API needs of the run queue.
type Queue interface {
	EnqueueRunTx(ctx context.Context, tx pgx.Tx, runID string, timeout time.Duration) (int64, error)
	CancelJobTx(ctx context.Context, tx pgx.Tx, jobID int64) error
}

// Config configures the RunService.
type Config struct {
	Store *store.Store
	Queue Queue
	Hub   *events.Hub
	// MaxRunTimeout is the default and the upper bound of a run's
	// run_timeout.
	MaxRunTimeout time.Duration
	// PollInterval is how often a stream re-reads the store when no
	// notification arrives (a safety net for missed notifications).
	// Default 2s.
	PollInterval time.Duration
	Logger       *slog.Logger
	// Models checks that a run's models can be built (provider known, key
	// present, offline steps parse) before it is accepted.
	Models *worker.Models
	// Keyring seals the params of runs that carry secrets.
	Keyring *secrets.Keyring
}

// RunService implements wayfinder.v1.RunService.
type RunService struct {
	wfv1.UnimplementedRunServiceServer
	cfg Config
}

// NewRunService returns the run service.
func NewRunService(cfg Config) *RunService {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	return &RunService{cfg: cfg}
}

// CreateRun implements wayfinder.v1.RunService.
func (s *RunService) CreateRun(ctx context.Context, req *wfv1.CreateRunRequest) (*wfv1.Run, error) {
	run, _, err := s.create(ctx, req.GetParams(), req.GetRequestId())
	return run, err
}

func (s *RunService) create(ctx context.Context, params *wfv1.RunParams, requestID string) (*wfv1.Run, bool, error) {
	var v fault.Violations
	validateRequestID(&v, requestID)
	if err := v.Err(); err != nil {
		return nil, false, err
	}
	if requestID != "" {
		// A retry gets the run its key made, even when the request could
		// not be accepted any more (a credential it names was deleted since).
		run, err := s.cfg.Store.RunByRequest(ctx, tenant.ID(ctx), requestID)
		if err == nil {
			return run, false, nil
		}
		if !errors.Is(err, fault.ErrNotFound) {
			return nil, false, err
		}
	}
	params, err := s.checkRunParams(ctx, params)
	if err != nil {
		return nil, false, err
	}
	if err := checkReplay(ctx, s.cfg.Store, params); err != nil {
		return nil, false, err
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	timeout := params.GetBrowser().GetRunTimeout().AsDuration()
	nr := store.NewRun{Tenant: tenant.ID(ctx), RequestID: requestID, Params: params, TraceContext: carrier}
	if redacted, ok := RedactParams(params); ok {
		// The record keeps the params redacted; the worker runs with the
		// sealed original.
		if s.cfg.Keyring == nil {
			return nil, false, fmt.Errorf("the server has no encryption key for the run's secrets: %w", fault.ErrFailedPrecondition)
		}
		raw, err := protojson.Marshal(params)
		if err != nil {
			return nil, false, fmt.Errorf("encode run params: %w", err)
		}
		nr.Params = redacted
		nr.Seal = func(runID string) ([]byte, error) {
			return s.cfg.Keyring.Seal(raw, secrets.RunParamsAAD(runID)), nil
		}
	}
	run, created, err := s.cfg.Store.CreateRun(ctx, nr, func(ctx context.Context, tx pgx.Tx, runID string) (int64, error) {
		return s.cfg.Queue.EnqueueRunTx(ctx, tx, runID, timeout)
	})
	if err != nil {
		return nil, false, err
	}
	if created {
		s.cfg.Logger.InfoContext(ctx, "run created", "run_id", run.Id, "tenant", nr.Tenant, "start_url", params.StartUrl)
	}
	return run, created, nil
}

// checkRunParams checks params as CreateRun does (fields, models, and
// the caller's tenant's credentials, catalog tools and prompts they name)
// and returns a copy with every default filled in.
func (s *RunService) checkRunParams(ctx context.Context, params *wfv1.RunParams) (*wfv1.RunParams, error) {
	params, err := validateParams(params, s.cfg.MaxRunTimeout)
	if err != nil {
		return nil, err
	}
	if err := checkModels(s.cfg.Models, params); err != nil {
		return nil, err
	}
	if err := checkCredentials(ctx, s.cfg.Store, params); err != nil {
		return nil, err
	}
	if err := checkCatalogTools(ctx, s.cfg.Store, params); err != nil {
		return nil, err
	}
	if err := checkPrompts(ctx, s.cfg.Store, params); err != nil {
		return nil, err
	}
	return params, nil
}

// GetRun implements wayfinder.v1.RunService.
func (s *RunService) GetRun(ctx context.Context, req *wfv1.GetRunRequest) (*wfv1.Run, error) {
	return s.ownRun(ctx, req.GetRunId())
}

// ownRun returns the caller's run. Another tenant's run is NOT_FOUND,
// exactly like a run that does not exist.
func (s *RunService) ownRun(ctx context.Context, id string) (*wfv1.Run, error) {
	if err := requireID("run_id", id); err != nil {
		return nil, err
	}
	run, err := s.cfg.Store.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if run.TenantId != tenant.ID(ctx) {
		return nil, fmt.Errorf("run %q: %w", id, fault.ErrNotFound)
	}
	return run, nil
}

// ListRuns implements wayfinder.v1.RunService.
func (s *RunService) ListRuns(ctx context.Context, req *wfv1.ListRunsRequest) (*wfv1.ListRunsResponse, error) {
	var v fault.Violations
	size := pageSize(&v, req.GetPageSize(), 50, 200)
	for i, st := range req.GetStatuses() {
		if _, ok := wfv1.RunStatus_name[int32(st)]; !ok || st == wfv1.RunStatus_RUN_STATUS_UNSPECIFIED {
			v.Add(fmt.Sprintf("statuses[%d]", i), "unknown run status %d", st)
		}
	}
	labels := parseLabelSelector(&v, req.GetLabels())
	if err := v.Err(); err != nil {
		return nil, err
	}
	runs, next, err := s.cfg.Store.ListRuns(ctx, store.ListRunsFilter{
		Tenant: tenant.ID(ctx), Statuses: req.GetStatuses(), Labels: labels, PageSize: size, PageToken: req.GetPageToken(),
	})
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		r.Output = nil // a page of outputs could outgrow a response; GetRun has it
	}
	return &wfv1.ListRunsResponse{Runs: runs, NextPageToken: next}, nil
}

// CancelRun implements wayfinder.v1.RunService.
func (s *RunService) CancelRun(ctx context.Context, req *wfv1.CancelRunRequest) (*wfv1.Run, error) {
	if err := requireID("run_id", req.GetRunId()); err != nil {
		return nil, err
	}
	if len(req.GetReason()) > 1000 {
		var v fault.Violations
		v.Add("reason", "at most 1000 characters")
		return nil, v.Err()
	}
	if _, err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return nil, err
	}
	run, err := s.cfg.Store.CancelRun(ctx, req.GetRunId(), req.GetReason(), s.cfg.Queue.CancelJobTx)
	if err == nil {
		s.cfg.Logger.InfoContext(ctx, "run cancel requested", "run_id", run.Id, "status", run.Status.String())
	}
	return run, err
}

// StreamRunEvents implements wayfinder.v1.RunService. It reads events from
// the store at the client's pace: a slow client only delays itself, and one
// that takes no event for SendStall is disconnected (streams.go).
func (s *RunService) StreamRunEvents(req *wfv1.StreamRunEventsRequest, stream grpc.ServerStreamingServer[wfv1.RunEvent]) error {
	last := req.GetAfterSequence()
	err := s.FollowRunEvents(stream.Context(), req.GetRunId(), last, func(ev *wfv1.RunEvent) error {
		if err := sendWithin(SendStall, func() error { return stream.Send(ev) }); err != nil {
			return err
		}
		last = ev.Sequence
		return nil
	})
	if errors.Is(err, errStalled) {
		s.cfg.Logger.WarnContext(stream.Context(), "event stream client too slow; disconnected", "stream", "run",
			"run_id", req.GetRunId(), "after_sequence", last, "stall", SendStall)
		return status.Errorf(codes.ResourceExhausted, "the client took no event for %s; resume with after_sequence=%d", SendStall, last)
	}
	return err
}

func (s *RunService) waitForChange(ctx context.Context, wake <-chan struct{}) error {
	t := time.NewTimer(s.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-wake:
	case <-t.C:
	}
	return nil
}

// ListSteps implements wayfinder.v1.RunService.
func (s *RunService) ListSteps(ctx context.Context, req *wfv1.ListStepsRequest) (*wfv1.ListStepsResponse, error) {
	var v fault.Violations
	if !isUUID(req.GetRunId()) {
		v.Add("run_id", "must be a run ID (UUID)")
	}
	size := pageSize(&v, req.GetPageSize(), 100, 500)
	after := 0
	if tok := req.GetPageToken(); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 {
			v.Add("page_token", "malformed page token; pass next_page_token from a previous response")
		}
		after = n
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if _, err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return nil, err
	}
	steps, err := s.cfg.Store.ListSteps(ctx, req.GetRunId(), int32(after), size+1)
	if err != nil {
		return nil, err
	}
	resp := &wfv1.ListStepsResponse{Steps: steps}
	if len(steps) > size {
		resp.Steps = steps[:size]
		resp.NextPageToken = strconv.Itoa(int(steps[size-1].Number))
	}
	return resp, nil
}

// ListPromptRuns implements wayfinder.v1.RunService.
func (s *RunService) ListPromptRuns(ctx context.Context, req *wfv1.ListPromptRunsRequest) (*wfv1.ListPromptRunsResponse, error) {
	var v fault.Violations
	if !isUUID(req.GetRunId()) {
		v.Add("run_id", "must be a run ID (UUID)")
	}
	size := pageSize(&v, req.GetPageSize(), 50, 200)
	if err := v.Err(); err != nil {
		return nil, err
	}
	if _, err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return nil, err
	}
	prs, next, err := s.cfg.Store.ListPromptRuns(ctx, req.GetRunId(), req.GetPageToken(), size)
	if err != nil {
		return nil, err
	}
	return &wfv1.ListPromptRunsResponse{PromptRuns: prs, NextPageToken: next}, nil
}

// GetMedia implements wayfinder.v1.RunService.
func (s *RunService) GetMedia(ctx context.Context, req *wfv1.GetMediaRequest) (*httpbody.HttpBody, error) {
	if err := requireID("media_id", req.GetMediaId()); err != nil {
		return nil, err
	}
	// Whose it is first: the bytes may sit in an object store, and another
	// tenant must learn nothing from how reading them fails.
	runID, err := s.cfg.Store.MediaRun(ctx, req.GetMediaId())
	if err != nil {
		return nil, err
	}
	if _, err := s.ownRun(ctx, runID); err != nil {
		return nil, fmt.Errorf("media %q: %w", req.GetMediaId(), fault.ErrNotFound)
	}
	m, err := s.cfg.Store.GetMedia(ctx, req.GetMediaId())
	if err != nil {
		return nil, err
	}
	return &httpbody.HttpBody{ContentType: m.ContentType, Data: m.Data}, nil
}

// RunAndWait implements wayfinder.v1.RunService.
func (s *RunService) RunAndWait(ctx context.Context, req *wfv1.RunAndWaitRequest) (*wfv1.RunAndWaitResponse, error) {
	req, err := withFlatParams(req)
	if err != nil {
		return nil, err
	}
	timeout := 5 * time.Minute
	if d := req.GetTimeout(); d != nil {
		var v fault.Violations
		if err := d.CheckValid(); err != nil || d.AsDuration() < time.Second || d.AsDuration() > time.Hour {
			v.Add("timeout", "must be between 1s and 1h")
			return nil, v.Err()
		}
		timeout = d.AsDuration()
	}
	run, _, err := s.create(ctx, req.GetParams(), req.GetRequestId())
	if err != nil {
		return nil, err
	}
	wake, unsubscribe := s.cfg.Hub.Subscribe(run.Id)
	defer unsubscribe()
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !store.IsTerminal(run.Status) {
		if err := s.waitForChange(waitCtx, wake); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return &wfv1.RunAndWaitResponse{Run: run, TimedOut: true}, nil
		}
		if run, err = s.cfg.Store.GetRun(ctx, run.Id); err != nil {
			return nil, err
		}
	}
	return &wfv1.RunAndWaitResponse{Run: run}, nil
}

// requireID checks that id is a UUID. A malformed ID is reported as not
// found rather than invalid: to the caller, no such resource exists.
func requireID(field, id string) error {
	if id == "" {
		var v fault.Violations
		v.Add(field, "required")
		return v.Err()
	}
	if !isUUID(id) {
		return fmt.Errorf("%s %q: %w", field, id, fault.ErrNotFound)
	}
	return nil
}

// isUUID reports whether id is a UUID in its canonical form (any case):
// uuid.Parse also reads forms Postgres does not (urn:uuid:…), which would
// make a query fail as an internal error.
func isUUID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == strings.ToLower(id)
}

// pageSize is a list call's page size: def when unset, else it must be
// 1-max (a violation of page_size is recorded in v).
func pageSize(v *fault.Violations, got int32, def, max int) int {
	switch size := int(got); {
	case size == 0:
		return def
	case size < 1 || size > max:
		v.Add("page_size", "must be between 1 and %d (got %d)", max, size)
		return def
	default:
		return size
	}
}
