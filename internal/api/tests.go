package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/suite"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// SuiteQueue is what the TestService needs of the queue: it enqueues a
// suite run's job, and cancels it when a queued suite run is cancelled.
type SuiteQueue interface {
	EnqueueSuiteRunTx(ctx context.Context, tx pgx.Tx, suiteRunID string) (int64, error)
	CancelJobTx(ctx context.Context, tx pgx.Tx, jobID int64) error
}

// TestConfig configures the TestService.
type TestConfig struct {
	Store *store.Store
	Queue SuiteQueue
	// Hub wakes WatchSuiteRun streams on a suite run's changes; nil: they
	// poll only.
	Hub *events.Hub
	// Runs checks a test's run parameters exactly as CreateRun does.
	Runs *RunService
	// MaxRunTimeout bounds a test's timeout and a suite's
	// default_timeout (the server's limit of a run's run_timeout).
	MaxRunTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// PollInterval is how often WatchSuiteRun re-reads a suite run when
	// no notification arrives. Default 2s.
	PollInterval time.Duration
}

// TestService implements wayfinder.v1.TestService: the caller's tenant's
// tests, suites and suite runs. Another tenant's are NOT_FOUND.
type TestService struct {
	wfv1.UnimplementedTestServiceServer
	cfg TestConfig
}

// NewTestService returns the test service.
func NewTestService(cfg TestConfig) *TestService {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.MaxRunTimeout <= 0 {
		cfg.MaxRunTimeout = 10 * time.Minute // the server's default (config.Config.RunTimeout)
	}
	return &TestService{cfg: cfg}
}

// checkTest checks test t (its request field is field) as it is to be
// stored: its fields, no inline secret (INVALID_ARGUMENT with reason
// INLINE_SECRET naming each), and the run parameters of its attempts
// (suite.AttemptParams, in su when set) and its rubric models as
// CreateRun checks a run's.
func (s *TestService) checkTest(ctx context.Context, field string, t *wfv1.Test, su *wfv1.Suite) error {
	var v fault.Violations
	if t == nil {
		v.Add(field, "required")
		return v.Err()
	}
	validateTestFields(&v, field, t, s.cfg.MaxRunTimeout)
	var ov fault.Violations
	validateOracles(&ov, field+".oracles", t.GetOracles())
	oraclesOK := ov.Err() == nil
	if err := addViolations(&v, "", ov.Err()); err != nil {
		return err
	}
	reason := ""
	for _, f := range secretFields(t.GetParams()) {
		v.Add(field+"."+f, "tests keep no secret values (they live in files and repositories); store it as a credential and name the credential")
		reason = ReasonInlineSecret
	}
	if t.GetParams() != nil {
		// The params its attempts run with: with a report indicator per
		// final-page oracle, and the attempt's run_timeout (without a
		// suite, the server's default, checked as the test's timeout).
		// Oracles in error would be reported again as the indicators
		// they add: then only the test's own params are checked.
		params := t.GetParams()
		if oraclesOK {
			params = suite.AttemptParams(t, su)
			if su == nil {
				params.Browser.RunTimeout = nil
			}
		}
		checked, err := s.cfg.Runs.checkRunParams(ctx, params)
		if err := addViolations(&v, field+".", err); err != nil {
			return err
		}
		if checked != nil {
			if err := s.checkRubricModels(ctx, &v, field, checked, t.GetOracles()); err != nil {
				return err
			}
		}
	}
	return violationsErr(&v, reason)
}

// checkRubricModels checks that the grading model of every rubric oracle
// can be built, resolved as the suite executor's grader does (the
// oracle's model settings, else the test's judge model settings, else its
// controller's, as an LLM judge), and that a credential an oracle's model
// names exists, adding what is wrong to v.
func (s *TestService) checkRubricModels(ctx context.Context, v *fault.Violations, field string, params *wfv1.RunParams, oracles []*wfv1.Oracle) error {
	for i, o := range oracles {
		r := o.GetRubric()
		if r == nil {
			continue
		}
		judge := &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_LLM, Model: params.GetJudge().GetModel()}
		if r.GetModel() != nil {
			judge.Model = r.GetModel()
		}
		p := &wfv1.RunParams{Goal: params.GetGoal(), Controller: params.GetController(), Judge: judge, PromptRunner: params.GetPromptRunner()}
		var found fault.Violations
		if err := addViolations(&found, "", checkModels(s.cfg.Runs.cfg.Models, p)); err != nil {
			return err
		}
		if r.GetModel() != nil {
			// The test's own judge credential is checked with its params.
			if err := addViolations(&found, "", checkCredentials(ctx, s.cfg.Store, p)); err != nil {
				return err
			}
		}
		var re *fault.RequestError
		if !errors.As(found.Err(), &re) {
			continue
		}
		for _, f := range re.Violations {
			if rest, ok := strings.CutPrefix(f.Field, "params.judge.model"); ok {
				v.Add(fmt.Sprintf("%s.oracles[%d].rubric.model%s", field, i, rest), "%s", f.Description)
			}
		}
	}
	return nil
}

// storedTest is t as stored: without its output-only fields.
func storedTest(t *wfv1.Test) *wfv1.Test {
	c := proto.Clone(t).(*wfv1.Test)
	c.CreateTime, c.UpdateTime = nil, nil
	return c
}

func storedSuite(su *wfv1.Suite) *wfv1.Suite {
	c := proto.Clone(su).(*wfv1.Suite)
	c.CreateTime, c.UpdateTime = nil, nil
	return c
}

// CreateTest implements wayfinder.v1.TestService.
func (s *TestService) CreateTest(ctx context.Context, req *wfv1.CreateTestRequest) (*wfv1.Test, error) {
	if err := s.checkTest(ctx, "test", req.GetTest(), nil); err != nil {
		return nil, err
	}
	out, err := s.cfg.Store.CreateTest(ctx, tenant.ID(ctx), storedTest(req.GetTest()))
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "test created", "tenant", tenant.ID(ctx), "test", out.Name)
	return out, nil
}

// UpdateTest implements wayfinder.v1.TestService.
func (s *TestService) UpdateTest(ctx context.Context, req *wfv1.UpdateTestRequest) (*wfv1.Test, error) {
	if err := s.checkTest(ctx, "test", req.GetTest(), nil); err != nil {
		return nil, err
	}
	out, err := s.cfg.Store.UpdateTest(ctx, tenant.ID(ctx), storedTest(req.GetTest()), req.GetAllowMissing())
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "test updated", "tenant", tenant.ID(ctx), "test", out.Name)
	return out, nil
}

// GetTest implements wayfinder.v1.TestService.
func (s *TestService) GetTest(ctx context.Context, req *wfv1.GetTestRequest) (*wfv1.Test, error) {
	if err := nameErr("name", req.GetName()); err != nil {
		return nil, err
	}
	return s.cfg.Store.GetTest(ctx, tenant.ID(ctx), req.GetName())
}

// ListTests implements wayfinder.v1.TestService.
func (s *TestService) ListTests(ctx context.Context, req *wfv1.ListTestsRequest) (*wfv1.ListTestsResponse, error) {
	var v fault.Violations
	size := pageSize(&v, req.GetPageSize(), 50, 200)
	if tag := req.GetTag(); tag != "" && !tagPattern.MatchString(tag) {
		v.Add("tag", "must match %s", tagPattern)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	tests, next, err := s.cfg.Store.ListTests(ctx, tenant.ID(ctx), req.GetTag(), size, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &wfv1.ListTestsResponse{Tests: tests, NextPageToken: next}, nil
}

// DeleteTest implements wayfinder.v1.TestService: FAILED_PRECONDITION
// while a suite lists the test.
func (s *TestService) DeleteTest(ctx context.Context, req *wfv1.DeleteTestRequest) (*emptypb.Empty, error) {
	if err := nameErr("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := s.cfg.Store.DeleteTest(ctx, tenant.ID(ctx), req.GetName()); err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "test deleted", "tenant", tenant.ID(ctx), "test", req.GetName())
	return &emptypb.Empty{}, nil
}

// CreateSuite implements wayfinder.v1.TestService.
func (s *TestService) CreateSuite(ctx context.Context, req *wfv1.CreateSuiteRequest) (*wfv1.Suite, error) {
	var v fault.Violations
	validateSuite(&v, "suite", req.GetSuite(), s.cfg.MaxRunTimeout)
	if err := v.Err(); err != nil {
		return nil, err
	}
	out, err := s.cfg.Store.CreateSuite(ctx, tenant.ID(ctx), storedSuite(req.GetSuite()))
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "suite created", "tenant", tenant.ID(ctx), "suite", out.Name)
	return out, nil
}

// UpdateSuite implements wayfinder.v1.TestService.
func (s *TestService) UpdateSuite(ctx context.Context, req *wfv1.UpdateSuiteRequest) (*wfv1.Suite, error) {
	var v fault.Violations
	validateSuite(&v, "suite", req.GetSuite(), s.cfg.MaxRunTimeout)
	if err := v.Err(); err != nil {
		return nil, err
	}
	out, err := s.cfg.Store.UpdateSuite(ctx, tenant.ID(ctx), storedSuite(req.GetSuite()), req.GetAllowMissing())
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "suite updated", "tenant", tenant.ID(ctx), "suite", out.Name)
	return out, nil
}

// GetSuite implements wayfinder.v1.TestService.
func (s *TestService) GetSuite(ctx context.Context, req *wfv1.GetSuiteRequest) (*wfv1.Suite, error) {
	if err := nameErr("name", req.GetName()); err != nil {
		return nil, err
	}
	return s.cfg.Store.GetSuite(ctx, tenant.ID(ctx), req.GetName())
}

// ListSuites implements wayfinder.v1.TestService.
func (s *TestService) ListSuites(ctx context.Context, req *wfv1.ListSuitesRequest) (*wfv1.ListSuitesResponse, error) {
	var v fault.Violations
	size := pageSize(&v, req.GetPageSize(), 50, 200)
	if err := v.Err(); err != nil {
		return nil, err
	}
	suites, next, err := s.cfg.Store.ListSuites(ctx, tenant.ID(ctx), size, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &wfv1.ListSuitesResponse{Suites: suites, NextPageToken: next}, nil
}

// DeleteSuite implements wayfinder.v1.TestService (its tests and its
// suite runs stay).
func (s *TestService) DeleteSuite(ctx context.Context, req *wfv1.DeleteSuiteRequest) (*emptypb.Empty, error) {
	if err := nameErr("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := s.cfg.Store.DeleteSuite(ctx, tenant.ID(ctx), req.GetName()); err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "suite deleted", "tenant", tenant.ID(ctx), "suite", req.GetName())
	return &emptypb.Empty{}, nil
}

// ImportSuite implements wayfinder.v1.TestService: the file's suite and
// every test are checked before anything is stored, then stored in one
// transaction.
func (s *TestService) ImportSuite(ctx context.Context, req *wfv1.ImportSuiteRequest) (*wfv1.ImportSuiteResponse, error) {
	var v fault.Violations
	switch n := len(req.GetYaml()); {
	case n == 0:
		v.Add("yaml", "the suite file is required")
	case n > maxSuiteFileBytes:
		v.Add("yaml", "at most %d bytes (got %d)", maxSuiteFileBytes, n)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	su, tests, err := suite.ParseFile([]byte(req.GetYaml()))
	if err != nil {
		v.Add("yaml", "%v", err)
		return nil, v.Err()
	}
	validateSuite(&v, "suite", su, s.cfg.MaxRunTimeout)
	reason := ""
	for i, t := range tests {
		err := s.checkTest(ctx, fmt.Sprintf("tests[%d]", i), t, nil)
		if hasReason(err, ReasonInlineSecret) {
			reason = ReasonInlineSecret
		}
		if err := addViolations(&v, "", err); err != nil {
			return nil, err
		}
	}
	if err := violationsErr(&v, reason); err != nil {
		return nil, err
	}
	stored := make([]*wfv1.Test, len(tests))
	for i, t := range tests {
		stored[i] = storedTest(t)
	}
	outSuite, outTests, err := s.cfg.Store.ImportSuite(ctx, tenant.ID(ctx), storedSuite(su), stored)
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "suite imported", "tenant", tenant.ID(ctx), "suite", outSuite.Name, "tests", len(outTests))
	return &wfv1.ImportSuiteResponse{Suite: outSuite, Tests: outTests}, nil
}

// ExportSuite implements wayfinder.v1.TestService.
func (s *TestService) ExportSuite(ctx context.Context, req *wfv1.ExportSuiteRequest) (*wfv1.ExportSuiteResponse, error) {
	if err := nameErr("name", req.GetName()); err != nil {
		return nil, err
	}
	su, tests, err := s.suiteTests(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	stored := make([]*wfv1.Test, len(tests))
	for i, t := range tests {
		stored[i] = storedTest(t)
	}
	data, err := suite.MarshalFile(storedSuite(su), stored)
	if err != nil {
		return nil, fmt.Errorf("export suite %q: %w", su.Name, err)
	}
	return &wfv1.ExportSuiteResponse{Yaml: string(data)}, nil
}

// suiteTests returns the caller's suite name and its tests in order. A
// listed test that is gone is FAILED_PRECONDITION.
func (s *TestService) suiteTests(ctx context.Context, name string) (*wfv1.Suite, []*wfv1.Test, error) {
	su, err := s.cfg.Store.GetSuite(ctx, tenant.ID(ctx), name)
	if err != nil {
		return nil, nil, err
	}
	tests := make([]*wfv1.Test, 0, len(su.GetTests()))
	for _, tn := range su.GetTests() {
		t, err := s.cfg.Store.GetTest(ctx, tenant.ID(ctx), tn)
		if errors.Is(err, fault.ErrNotFound) {
			return nil, nil, fmt.Errorf("%w: suite %q lists test %q, which does not exist", fault.ErrFailedPrecondition, name, tn)
		}
		if err != nil {
			return nil, nil, err
		}
		tests = append(tests, t)
	}
	return su, tests, nil
}

// StartSuiteRun implements wayfinder.v1.TestService. A request ID already
// used returns its suite run as it is. Otherwise the suite's tests (those
// with one of the tags, when given) are checked again as they will run —
// a credential, prompt or catalog tool one names may have gone since it
// was stored, which is FAILED_PRECONDITION naming the test — and
// snapshotted into a queued suite run with its job.
func (s *TestService) StartSuiteRun(ctx context.Context, req *wfv1.StartSuiteRunRequest) (*wfv1.SuiteRun, error) {
	var v fault.Violations
	validateName(&v, "suite", req.GetSuite())
	validateTags(&v, "tags", req.GetTags())
	if len(req.GetRequestId()) > maxSuiteRequestIDLen {
		v.Add("request_id", "at most %d characters", maxSuiteRequestIDLen)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	tn := tenant.ID(ctx)
	if id := req.GetRequestId(); id != "" {
		sr, err := s.cfg.Store.SuiteRunByRequest(ctx, tn, id)
		if err == nil {
			return sr, nil
		}
		if !errors.Is(err, fault.ErrNotFound) {
			return nil, err
		}
	}
	su, all, err := s.suiteTests(ctx, req.GetSuite())
	if err != nil {
		return nil, err
	}
	var tests []*wfv1.Test
	for _, t := range all {
		if len(req.GetTags()) == 0 || slices.ContainsFunc(t.GetTags(), func(tag string) bool { return slices.Contains(req.GetTags(), tag) }) {
			tests = append(tests, t)
		}
	}
	if len(tests) == 0 {
		return nil, fmt.Errorf("%w: no test of suite %q has any of the tags %s", fault.ErrFailedPrecondition, su.Name, strings.Join(req.GetTags(), ", "))
	}
	if su.DefaultTimeout == nil {
		// The snapshot names the limit its attempts get: the default, or
		// this server's run limit when that is lower.
		su.DefaultTimeout = durationpb.New(min(suite.DefaultTimeout, s.cfg.MaxRunTimeout))
	}
	for _, t := range tests {
		err := s.checkTest(ctx, "test", t, su)
		var re *fault.RequestError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("%w: test %q cannot run as it is: %s", fault.ErrFailedPrecondition, t.Name, re.Error())
		}
		if err != nil {
			return nil, err
		}
	}
	sr, created, err := s.cfg.Store.CreateSuiteRun(ctx, store.NewSuiteRun{
		Tenant: tn, RequestID: req.GetRequestId(), Suite: su, Tests: tests, Tags: req.GetTags(),
	}, s.cfg.Queue.EnqueueSuiteRunTx)
	if err != nil {
		return nil, err
	}
	if created {
		s.cfg.Logger.InfoContext(ctx, "suite run created", "tenant", tn, "suite", su.Name, "suite_run_id", sr.Id, "tests", len(tests))
	}
	return sr, nil
}

// GetSuiteRun implements wayfinder.v1.TestService.
func (s *TestService) GetSuiteRun(ctx context.Context, req *wfv1.GetSuiteRunRequest) (*wfv1.SuiteRun, error) {
	return s.ownSuiteRun(ctx, req.GetId())
}

// ownSuiteRun returns the caller's suite run id. Another tenant's is
// NOT_FOUND, exactly like one that does not exist.
func (s *TestService) ownSuiteRun(ctx context.Context, id string) (*wfv1.SuiteRun, error) {
	if err := requireID("id", id); err != nil {
		return nil, err
	}
	sr, err := s.cfg.Store.GetSuiteRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if sr.TenantId != tenant.ID(ctx) {
		return nil, fmt.Errorf("suite run %q: %w", id, fault.ErrNotFound)
	}
	return sr, nil
}

// ListSuiteRuns implements wayfinder.v1.TestService.
func (s *TestService) ListSuiteRuns(ctx context.Context, req *wfv1.ListSuiteRunsRequest) (*wfv1.ListSuiteRunsResponse, error) {
	var v fault.Violations
	size := pageSize(&v, req.GetPageSize(), 50, 200)
	if name := req.GetSuite(); name != "" {
		validateName(&v, "suite", name)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	runs, next, err := s.cfg.Store.ListSuiteRuns(ctx, store.ListSuiteRunsFilter{
		Tenant: tenant.ID(ctx), Suite: req.GetSuite(), PageSize: size, PageToken: req.GetPageToken(),
	})
	if err != nil {
		return nil, err
	}
	return &wfv1.ListSuiteRunsResponse{SuiteRuns: runs, NextPageToken: next}, nil
}

// CancelSuiteRun implements wayfinder.v1.TestService: a queued suite run
// ends CANCELLED at once; a running one is marked cancel_requested and its
// executor cancels its runs and ends it.
func (s *TestService) CancelSuiteRun(ctx context.Context, req *wfv1.CancelSuiteRunRequest) (*wfv1.SuiteRun, error) {
	if _, err := s.ownSuiteRun(ctx, req.GetId()); err != nil {
		return nil, err
	}
	sr, err := s.cfg.Store.CancelSuiteRun(ctx, req.GetId(), s.cfg.Queue.CancelJobTx)
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "suite run cancel requested", "suite_run_id", sr.Id, "status", sr.Status.String())
	return sr, nil
}

// WatchSuiteRun implements wayfinder.v1.TestService. A client that takes
// no message for SendStall is disconnected.
func (s *TestService) WatchSuiteRun(req *wfv1.WatchSuiteRunRequest, stream grpc.ServerStreamingServer[wfv1.SuiteRun]) error {
	err := s.followSuiteRun(stream.Context(), req.GetId(), func(sr *wfv1.SuiteRun) error {
		return sendWithin(SendStall, func() error { return stream.Send(sr) })
	})
	if errors.Is(err, errStalled) {
		return status.Errorf(codes.ResourceExhausted, "the client took no message for %s; watch again", SendStall)
	}
	return err
}

// followSuiteRun sends the caller's suite run id now and then each time
// it changes (woken by its NOTIFY key, or every PollInterval), and
// returns nil once it has sent it with a final status.
func (s *TestService) followSuiteRun(ctx context.Context, id string, send func(*wfv1.SuiteRun) error) error {
	if err := requireID("id", id); err != nil {
		return err
	}
	var wake <-chan struct{}
	if s.cfg.Hub != nil {
		ch, unsubscribe := s.cfg.Hub.Subscribe(store.SuiteRunKey(id))
		defer unsubscribe()
		wake = ch
	}
	sr, err := s.ownSuiteRun(ctx, id)
	if err != nil {
		return err
	}
	if err := send(sr); err != nil {
		return err
	}
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for !store.SuiteRunFinal(sr.Status) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-tick.C:
		}
		next, err := s.cfg.Store.GetSuiteRun(ctx, id)
		if err != nil {
			return err
		}
		if proto.Equal(next, sr) {
			continue
		}
		if err := send(next); err != nil {
			return err
		}
		sr = next
		if store.SuiteRunFinal(sr.Status) {
			break
		}
		// Changes that come close together (a suite's tests ending at
		// once) reach the watcher as one message: the hub's wake is
		// kept while this waits.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(watchCoalesce):
		}
	}
	return nil
}

// watchCoalesce is the least time between two WatchSuiteRun messages.
const watchCoalesce = 250 * time.Millisecond

// nameErr checks a test or suite name given by a request.
func nameErr(field, name string) error {
	var v fault.Violations
	validateName(&v, field, name)
	return v.Err()
}
