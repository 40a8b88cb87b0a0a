package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/live"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// LiveConfig configures the LiveService.
type LiveConfig struct {
	Store *store.Store
	// Hub wakes live views on the runs' notifications; nil: they poll.
	Hub *events.Hub
	// Registry holds the Sessions of the runs this process executes (the
	// live view's fast path); nil when it executes none.
	Registry *live.Registry
	Logger   *slog.Logger
}

// LiveService implements wayfinder.v1.LiveService. Every call reaches the
// run's worker through the database, so any replica answers it.
type LiveService struct {
	wfv1.UnimplementedLiveServiceServer
	cfg LiveConfig
}

// NewLiveService returns the live service.
func NewLiveService(cfg LiveConfig) *LiveService {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &LiveService{cfg: cfg}
}

// Reasons of the LiveService's FAILED_PRECONDITION statuses
// (google.rpc.ErrorInfo.reason, domain errorDomain).
const (
	ReasonLiveUnavailable    = "LIVE_UNAVAILABLE"
	ReasonTakeoverInProgress = "TAKEOVER_IN_PROGRESS"
	ReasonTakeoverNotActive  = "TAKEOVER_NOT_ACTIVE"
	errorDomain              = "wayfinder.v1"
)

var liveReasons = []struct {
	err    error
	reason string
}{
	{store.ErrLiveUnavailable, ReasonLiveUnavailable},
	{store.ErrTakeoverInProgress, ReasonTakeoverInProgress},
	{store.ErrTakeoverNotActive, ReasonTakeoverNotActive},
}

// withReason turns the live view's failed preconditions into
// FAILED_PRECONDITION statuses that name their reason in a
// google.rpc.ErrorInfo; other errors are left to the interceptors.
func withReason(err error) error {
	for _, r := range liveReasons {
		if !errors.Is(err, r.err) {
			continue
		}
		st := status.New(codes.FailedPrecondition, err.Error())
		if d, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: r.reason, Domain: errorDomain}); derr == nil {
			st = d
		}
		return st.Err()
	}
	return err
}

// ownRun checks that run id is the caller's. Another tenant's run is
// NOT_FOUND, exactly like a run that does not exist.
func (s *LiveService) ownRun(ctx context.Context, id string) error {
	if err := requireID("run_id", id); err != nil {
		return err
	}
	run, err := s.cfg.Store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	if run.TenantId != tenant.ID(ctx) {
		return fmt.Errorf("run %q: %w", id, fault.ErrNotFound)
	}
	return nil
}

// WatchLive implements wayfinder.v1.LiveService. A client that takes no
// frame for SendStall is disconnected.
func (s *LiveService) WatchLive(req *wfv1.WatchLiveRequest, stream grpc.ServerStreamingServer[wfv1.LiveFrame]) error {
	err := s.FollowLive(stream.Context(), req, func(f *wfv1.LiveFrame) error {
		return sendWithin(SendStall, func() error { return stream.Send(f) })
	})
	if errors.Is(err, errStalled) {
		return status.Errorf(codes.ResourceExhausted, "the client took no frame for %s", SendStall)
	}
	return err
}

// FollowLive checks and answers a WatchLive request through send (the
// gRPC stream, or the dashboard's SSE adapter). It returns nil when the
// run's live view ends and ctx.Err() when ctx ends.
func (s *LiveService) FollowLive(ctx context.Context, req *wfv1.WatchLiveRequest, send func(*wfv1.LiveFrame) error) error {
	if err := validateWatchLive(req); err != nil {
		return err
	}
	if err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return err
	}
	err := live.Watch(ctx, live.WatchConfig{
		Store: s.cfg.Store, Hub: s.cfg.Hub, Registry: s.cfg.Registry,
		RunID: req.GetRunId(), MaxFPS: int(req.GetMaxFps()), Logger: s.cfg.Logger,
	}, send)
	return withReason(err)
}

// TakeOver implements wayfinder.v1.LiveService.
func (s *LiveService) TakeOver(ctx context.Context, req *wfv1.TakeOverRequest) (*wfv1.Takeover, error) {
	if err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return nil, err
	}
	t, err := s.cfg.Store.RequestTakeover(ctx, req.GetRunId(), tenant.From(ctx).Actor())
	if err != nil {
		return nil, withReason(err)
	}
	s.cfg.Logger.InfoContext(ctx, "takeover requested", "run_id", t.RunId, "takeover_id", t.Id, "by", t.RequestedBy)
	return t, nil
}

// SendLiveInput implements wayfinder.v1.LiveService.
func (s *LiveService) SendLiveInput(ctx context.Context, req *wfv1.SendLiveInputRequest) (*wfv1.SendLiveInputResponse, error) {
	if err := validateSendLiveInput(req); err != nil {
		return nil, err
	}
	if err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return nil, err
	}
	if err := s.cfg.Store.AppendLiveInputs(ctx, req.GetRunId(), req.GetTakeoverId(), req.GetEvents()); err != nil {
		return nil, withReason(err)
	}
	return &wfv1.SendLiveInputResponse{Accepted: int32(len(req.GetEvents()))}, nil
}

// HandBack implements wayfinder.v1.LiveService.
func (s *LiveService) HandBack(ctx context.Context, req *wfv1.HandBackRequest) (*wfv1.Takeover, error) {
	if err := validateHandBack(req); err != nil {
		return nil, err
	}
	if err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return nil, err
	}
	t, err := s.cfg.Store.HandBackTakeover(ctx, req.GetRunId(), req.GetTakeoverId(), tenant.From(ctx).Actor(), req.GetNote())
	if err != nil {
		return nil, withReason(err)
	}
	s.cfg.Logger.InfoContext(ctx, "takeover handed back", "run_id", t.RunId, "takeover_id", t.Id, "state", t.State.String())
	return t, nil
}
