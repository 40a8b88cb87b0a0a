package store_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// fakeQueue stands in for River. Its enqueue either returns fixed job IDs or
// inserts real river_job rows, so that ReapLostRuns and the collector see
// them.
type fakeQueue struct {
	riverRows bool  // insert a river_job row per run
	jobID     int64 // when !riverRows: the first job ID handed out
	err       error // returned by enqueue when set

	mu        sync.Mutex
	enqueued  []string
	cancelled []int64
	cancelErr error
}

func (q *fakeQueue) enqueue(ctx context.Context, tx pgx.Tx, runID string) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.enqueued = append(q.enqueued, runID)
	if q.err != nil {
		return 0, q.err
	}
	if q.riverRows {
		var id int64
		err := tx.QueryRow(ctx, `
			INSERT INTO river_job (args, kind, max_attempts, queue, state)
			VALUES ('{}', 'test', 1, 'default', 'available') RETURNING id`).Scan(&id)
		return id, err
	}
	id := q.jobID + int64(len(q.enqueued)) - 1
	return id, nil
}

func (q *fakeQueue) cancelJob(_ context.Context, _ pgx.Tx, jobID int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cancelled = append(q.cancelled, jobID)
	return q.cancelErr
}

func (q *fakeQueue) Enqueued() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.enqueued...)
}

func (q *fakeQueue) Cancelled() []int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]int64(nil), q.cancelled...)
}

func newStore(t *testing.T) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	pool := storetest.NewPool(t)
	return store.New(pool), pool
}

func testParams(labels map[string]string) *wfv1.RunParams {
	return &wfv1.RunParams{
		Goal:     "find the pricing page",
		StartUrl: "https://example.com/",
		MaxSteps: 25,
		Labels:   labels,
	}
}

func createRun(t *testing.T, s *store.Store, q *fakeQueue, labels map[string]string) *wfv1.Run {
	t.Helper()
	run, created, err := s.CreateRun(t.Context(), store.NewRun{Params: testParams(labels)}, q.enqueue)
	require.NoError(t, err)
	require.True(t, created)
	return run
}

func startRun(t *testing.T, s *store.Store, id string) *wfv1.Run {
	t.Helper()
	run, execute, err := s.StartRun(t.Context(), id)
	require.NoError(t, err)
	require.True(t, execute)
	return run
}

func getRun(t *testing.T, s *store.Store, id string) *wfv1.Run {
	t.Helper()
	run, err := s.GetRun(t.Context(), id)
	require.NoError(t, err)
	return run
}

func listEvents(t *testing.T, s *store.Store, id string) []*wfv1.RunEvent {
	t.Helper()
	evs, err := s.ListEvents(t.Context(), id, 0, 1000)
	require.NoError(t, err)
	return evs
}

func eventTypes(evs []*wfv1.RunEvent) []wfv1.RunEventType {
	out := make([]wfv1.RunEventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

func count(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), query, args...).Scan(&n))
	return n
}

// setJobState moves a river_job row to state, setting finalized_at as
// River's check constraint requires for finalized states.
func setJobState(t *testing.T, pool *pgxpool.Pool, jobID int64, state string) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `
		UPDATE river_job SET state = $2::river_job_state,
			finalized_at = CASE WHEN $2 IN ('cancelled', 'completed', 'discarded') THEN now() END
		WHERE id = $1`, jobID, state)
	require.NoError(t, err)
}

func TestCreateRun(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	params := testParams(map[string]string{"env": "prod"})
	trace := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}

	calls := 0
	enqueue := func(ctx context.Context, tx pgx.Tx, runID string) (int64, error) {
		calls++
		// The run row exists inside the transaction but is not yet
		// visible outside it.
		var inside int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM runs WHERE id = $1`, runID).Scan(&inside))
		require.Equal(t, 1, inside)
		require.Equal(t, 0, count(t, pool, `SELECT count(*) FROM runs`))
		return 42, nil
	}
	run, created, err := s.CreateRun(ctx, store.NewRun{Params: params, TraceContext: trace}, enqueue)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, 1, calls)

	require.NoError(t, uuid.Validate(run.Id))
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_QUEUED, run.Status)
	require.True(t, proto.Equal(params, run.Params), "params: got %v", run.Params)
	require.NotNil(t, run.CreateTime)
	require.Nil(t, run.StartTime)
	require.Nil(t, run.EndTime)
	require.Nil(t, run.Error)
	require.Zero(t, run.Attempts)
	require.False(t, run.Success)
	require.False(t, run.CancelRequested)
	require.EqualValues(t, 1, run.LastEventSequence)

	jobID, err := s.RunJob(ctx, run.Id)
	require.NoError(t, err)
	require.EqualValues(t, 42, jobID)

	gotTrace, err := s.RunTraceContext(ctx, run.Id)
	require.NoError(t, err)
	require.Equal(t, trace, gotTrace)

	require.True(t, proto.Equal(run, getRun(t, s, run.Id)))

	evs := listEvents(t, s, run.Id)
	require.Len(t, evs, 1)
	require.Equal(t, run.Id, evs[0].RunId)
	require.EqualValues(t, 1, evs[0].Sequence)
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_QUEUED, evs[0].Type)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_QUEUED, evs[0].Status)
	require.NotNil(t, evs[0].Time)
}

func TestCreateRunEnqueueErrorRollsBack(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	errQueue := errors.New("queue unavailable")
	q := &fakeQueue{err: errQueue}

	run, created, err := s.CreateRun(t.Context(), store.NewRun{RequestID: "req-1", Params: testParams(nil)}, q.enqueue)
	require.ErrorIs(t, err, errQueue)
	require.False(t, created)
	require.Nil(t, run)
	require.Len(t, q.Enqueued(), 1)
	require.Zero(t, count(t, pool, `SELECT count(*) FROM runs`))
	require.Zero(t, count(t, pool, `SELECT count(*) FROM run_events`))

	// The request ID was not consumed: a retry creates the run.
	q.err = nil
	run, created, err = s.CreateRun(t.Context(), store.NewRun{RequestID: "req-1", Params: testParams(nil)}, q.enqueue)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, run.Id, q.Enqueued()[1])
}

func TestCreateRunIdempotent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		first       string
		second      string
		wantSameRun bool
	}{
		{name: "same request ID", first: "req-1", second: "req-1", wantSameRun: true},
		{name: "different request IDs", first: "req-1", second: "req-2"},
		{name: "no request ID", first: "", second: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, pool := newStore(t)
			q := &fakeQueue{jobID: 42}
			first, created, err := s.CreateRun(t.Context(), store.NewRun{RequestID: tt.first, Params: testParams(nil)}, q.enqueue)
			require.NoError(t, err)
			require.True(t, created)
			require.Equal(t, tt.first, first.RequestId)

			second, created, err := s.CreateRun(t.Context(), store.NewRun{RequestID: tt.second, Params: testParams(nil)}, q.enqueue)
			require.NoError(t, err)
			if tt.wantSameRun {
				require.False(t, created)
				require.Equal(t, first.Id, second.Id)
				require.True(t, proto.Equal(first, second))
				require.Len(t, q.Enqueued(), 1)
				require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM runs`))
				require.Len(t, listEvents(t, s, first.Id), 1)
				return
			}
			require.True(t, created)
			require.NotEqual(t, first.Id, second.Id)
			require.Len(t, q.Enqueued(), 2)
			require.Equal(t, 2, count(t, pool, `SELECT count(*) FROM runs`))
		})
	}
}

func TestStartRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup brings a fresh queued run into the state under test.
		setup        func(t *testing.T, s *store.Store, q *fakeQueue, id string)
		wantExecute  bool
		wantStatus   wfv1.RunStatus
		wantAttempts int32
		// wantEvent is the type of the last event afterwards; wantNew the
		// number of events StartRun appended.
		wantEvent   wfv1.RunEventType
		wantNew     int
		wantMessage string
	}{
		{
			name:         "queued run starts",
			setup:        func(*testing.T, *store.Store, *fakeQueue, string) {},
			wantExecute:  true,
			wantStatus:   wfv1.RunStatus_RUN_STATUS_RUNNING,
			wantAttempts: 1,
			wantEvent:    wfv1.RunEventType_RUN_EVENT_TYPE_STARTED,
			wantNew:      1,
			wantMessage:  "run started",
		},
		{
			name: "running run resumes (redelivery)",
			setup: func(t *testing.T, s *store.Store, _ *fakeQueue, id string) {
				startRun(t, s, id)
			},
			wantExecute:  true,
			wantStatus:   wfv1.RunStatus_RUN_STATUS_RUNNING,
			wantAttempts: 2,
			wantEvent:    wfv1.RunEventType_RUN_EVENT_TYPE_STARTED,
			wantNew:      1,
			wantMessage:  "run resumed (attempt 2)",
		},
		{
			name: "requeued run resumes",
			setup: func(t *testing.T, s *store.Store, _ *fakeQueue, id string) {
				startRun(t, s, id)
				require.NoError(t, s.RequeueRun(t.Context(), id, "worker shutting down"))
			},
			wantExecute:  true,
			wantStatus:   wfv1.RunStatus_RUN_STATUS_RUNNING,
			wantAttempts: 2,
			wantEvent:    wfv1.RunEventType_RUN_EVENT_TYPE_STARTED,
			wantNew:      1,
			wantMessage:  "run resumed (attempt 2)",
		},
		{
			name: "cancel requested",
			setup: func(t *testing.T, s *store.Store, q *fakeQueue, id string) {
				startRun(t, s, id)
				run, err := s.CancelRun(t.Context(), id, "stop it", q.cancelJob)
				require.NoError(t, err)
				require.True(t, run.CancelRequested)
				require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, run.Status)
			},
			wantExecute:  false,
			wantStatus:   wfv1.RunStatus_RUN_STATUS_CANCELLED,
			wantAttempts: 1,
			wantEvent:    wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
			wantNew:      1,
		},
		{
			name: "terminal run is left alone",
			setup: func(t *testing.T, s *store.Store, _ *fakeQueue, id string) {
				startRun(t, s, id)
				_, err := s.FinishRun(t.Context(), id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
				require.NoError(t, err)
			},
			wantExecute:  false,
			wantStatus:   wfv1.RunStatus_RUN_STATUS_COMPLETED,
			wantAttempts: 1,
			wantEvent:    wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
			wantNew:      0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t)
			q := &fakeQueue{jobID: 7}
			id := createRun(t, s, q, nil).Id
			tt.setup(t, s, q, id)
			before := getRun(t, s, id)
			eventsBefore := listEvents(t, s, id)

			run, execute, err := s.StartRun(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, tt.wantExecute, execute)
			require.Equal(t, tt.wantStatus, run.Status)
			require.Equal(t, tt.wantAttempts, run.Attempts)
			require.True(t, proto.Equal(run, getRun(t, s, id)), "returned run differs from the stored one")
			require.NotNil(t, run.StartTime)
			if before.StartTime != nil {
				require.True(t, proto.Equal(before.StartTime, run.StartTime), "start time changed on resume")
			}

			evs := listEvents(t, s, id)
			require.Len(t, evs, len(eventsBefore)+tt.wantNew)
			last := evs[len(evs)-1]
			require.Equal(t, tt.wantEvent, last.Type)
			require.Equal(t, run.LastEventSequence, last.Sequence)
			if tt.wantMessage != "" {
				require.Equal(t, tt.wantMessage, last.Message)
			}
			if tt.wantNew == 0 {
				require.True(t, proto.Equal(before, run), "terminal run changed")
			}
			if tt.wantStatus == wfv1.RunStatus_RUN_STATUS_CANCELLED {
				require.NotNil(t, run.Error)
				require.Equal(t, wfv1.ErrorCategory_ERROR_CATEGORY_CANCELLED, run.Error.Category)
				require.NotNil(t, run.EndTime)
			}
		})
	}
}

func TestFinishRunNeverRegresses(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
	startRun(t, s, id)

	verdict := &wfv1.JudgeVerdict{Done: true, Confidence: 0.9, Reason: "pricing page shown"}
	run, err := s.FinishRun(ctx, id, store.Outcome{
		Status:   wfv1.RunStatus_RUN_STATUS_COMPLETED,
		FinalURL: "https://example.com/pricing",
		Verdict:  verdict,
	})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, run.Status)
	require.True(t, run.Success)
	require.NotNil(t, run.EndTime)
	require.Nil(t, run.Error)
	require.Equal(t, "https://example.com/pricing", run.FinalUrl)
	require.True(t, proto.Equal(verdict, run.FinalVerdict))
	require.True(t, proto.Equal(run, getRun(t, s, id)))

	again, err := s.FinishRun(ctx, id, store.Outcome{
		Status: wfv1.RunStatus_RUN_STATUS_ERROR,
		Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL, Message: "late failure"},
	})
	require.NoError(t, err)
	require.True(t, proto.Equal(run, again), "terminal run changed: %v", again)
	require.True(t, proto.Equal(run, getRun(t, s, id)))

	finished := 0
	for _, ev := range listEvents(t, s, id) {
		if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED {
			finished++
		}
	}
	require.Equal(t, 1, finished)
}

func TestFinishRunRejectsLiveStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status wfv1.RunStatus
	}{
		{"unspecified", wfv1.RunStatus_RUN_STATUS_UNSPECIFIED},
		{"queued", wfv1.RunStatus_RUN_STATUS_QUEUED},
		{"running", wfv1.RunStatus_RUN_STATUS_RUNNING},
		{"awaiting approval", wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL},
		{"unknown enum value", wfv1.RunStatus(99)},
	}
	s, _ := newStore(t)
	id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
	startRun(t, s, id)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.FinishRun(t.Context(), id, store.Outcome{Status: tt.status})
			require.Error(t, err)
			run := getRun(t, s, id)
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, run.Status)
			require.EqualValues(t, 2, run.LastEventSequence)
		})
	}
}

func TestRecordStep(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
	startRun(t, s, id)

	now := time.Now().UTC().Truncate(time.Microsecond)
	step := &wfv1.Step{
		RunId:     id,
		Number:    1,
		StartTime: timestamppb.New(now),
		EndTime:   timestamppb.New(now.Add(time.Second)),
		Url:       "https://example.com/pricing",
		Title:     "Pricing",
		Reasoning: "the pricing link is in the header",
		Actor:     "model",
	}
	input := proto.Clone(step).(*wfv1.Step)
	png := []byte("\x89PNG\r\n\x1a\nfake image bytes")

	recorded, err := s.RecordStep(ctx, step, &store.Media{ContentType: "image/png", Data: png})
	require.NoError(t, err)
	require.True(t, recorded)
	require.True(t, proto.Equal(input, step), "RecordStep modified its argument")

	steps, err := s.ListSteps(ctx, id, 0, 10)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	mediaID := steps[0].ScreenshotMediaId
	require.NoError(t, uuid.Validate(mediaID))
	want := proto.Clone(step).(*wfv1.Step)
	want.ScreenshotMediaId = mediaID
	require.True(t, proto.Equal(want, steps[0]), "stored step: %v", steps[0])

	m, err := s.GetMedia(ctx, mediaID)
	require.NoError(t, err)
	require.Equal(t, png, m.Data)
	require.Equal(t, "image/png", m.ContentType)
	require.Equal(t, id, m.RunID)
	require.EqualValues(t, 1, m.StepNumber)

	run := getRun(t, s, id)
	require.EqualValues(t, 1, run.StepCount)
	require.Equal(t, mediaID, run.FinalScreenshotMediaId)
	require.Equal(t, step.Url, run.FinalUrl)

	evs := listEvents(t, s, id)
	last := evs[len(evs)-1]
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED, last.Type)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, last.Status)
	require.True(t, proto.Equal(want, last.GetStep()), "event step: %v", last.GetStep())

	// A repeated delivery of the same step changes nothing.
	dup := proto.Clone(step).(*wfv1.Step)
	dup.Title = "Pricing (again)"
	recorded, err = s.RecordStep(ctx, dup, &store.Media{ContentType: "image/png", Data: []byte("other")})
	require.NoError(t, err)
	require.False(t, recorded)
	steps, err = s.ListSteps(ctx, id, 0, 10)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	require.True(t, proto.Equal(want, steps[0]))
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM media`))
	require.Len(t, listEvents(t, s, id), len(evs))
	require.True(t, proto.Equal(run, getRun(t, s, id)))

	// A step without a screenshot keeps the last screenshot as final.
	step2 := &wfv1.Step{RunId: id, Number: 2, StartTime: timestamppb.New(now), EndTime: timestamppb.New(now), Url: "https://example.com/pricing#plans"}
	recorded, err = s.RecordStep(ctx, step2, nil)
	require.NoError(t, err)
	require.True(t, recorded)
	run = getRun(t, s, id)
	require.EqualValues(t, 2, run.StepCount)
	require.Equal(t, mediaID, run.FinalScreenshotMediaId)
	require.Equal(t, step2.Url, run.FinalUrl)
	steps, err = s.ListSteps(ctx, id, 1, 10)
	require.NoError(t, err)
	require.Len(t, steps, 1)
	require.EqualValues(t, 2, steps[0].Number)
	require.Empty(t, steps[0].ScreenshotMediaId)
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM media`))
}

func TestEvents(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
	startRun(t, s, id)
	for n := int32(1); n <= 2; n++ {
		now := timestamppb.Now()
		recorded, err := s.RecordStep(ctx, &wfv1.Step{RunId: id, Number: n, StartTime: now, EndTime: now}, nil)
		require.NoError(t, err)
		require.True(t, recorded)
	}
	final, err := s.FinishRun(ctx, id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)

	all := listEvents(t, s, id)
	require.Equal(t, []wfv1.RunEventType{
		wfv1.RunEventType_RUN_EVENT_TYPE_QUEUED,
		wfv1.RunEventType_RUN_EVENT_TYPE_STARTED,
		wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED,
		wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED,
		wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
	}, eventTypes(all))
	for i, ev := range all {
		require.EqualValues(t, i+1, ev.Sequence, "sequences must start at 1 without gaps")
		require.Equal(t, id, ev.RunId)
	}

	fin := all[len(all)-1]
	require.NotNil(t, fin.GetRun(), "FINISHED carries the run")
	require.Equal(t, fin.Sequence, fin.GetRun().LastEventSequence)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, fin.GetRun().Status)
	require.True(t, proto.Equal(final, fin.GetRun()), "FINISHED payload differs from the returned run")
	require.True(t, proto.Equal(final, getRun(t, s, id)), "FINISHED payload differs from the stored run")

	tests := []struct {
		name     string
		after    int64
		limit    int
		wantSeqs []int64
	}{
		{name: "from the start", after: 0, limit: 100, wantSeqs: []int64{1, 2, 3, 4, 5}},
		{name: "after 2", after: 2, limit: 100, wantSeqs: []int64{3, 4, 5}},
		{name: "after 2 limited", after: 2, limit: 2, wantSeqs: []int64{3, 4}},
		{name: "after the last", after: 5, limit: 100, wantSeqs: []int64{}},
		{name: "past the end", after: 50, limit: 100, wantSeqs: []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			evs, err := s.ListEvents(t.Context(), id, tt.after, tt.limit)
			require.NoError(t, err)
			got := make([]int64, len(evs))
			for i, ev := range evs {
				got[i] = ev.Sequence
			}
			require.Equal(t, tt.wantSeqs, got)
		})
	}
}

func TestAppendEventConcurrentSequences(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id

	const writers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := s.AppendEvent(t.Context(), id, &wfv1.RunEvent{
					Type:    wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_CALLED,
					Status:  wfv1.RunStatus_RUN_STATUS_QUEUED,
					Message: fmt.Sprintf("writer %d event %d", w, i),
				})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	evs := listEvents(t, s, id)
	require.Len(t, evs, 1+writers*each)
	for i, ev := range evs {
		require.EqualValues(t, i+1, ev.Sequence)
	}
	require.EqualValues(t, 1+writers*each, getRun(t, s, id).LastEventSequence)
}

func TestCancelRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		setup        func(t *testing.T, s *store.Store, id string)
		reason       string
		wantReason   string
		wantStatus   wfv1.RunStatus
		wantCancel   bool // cancel_requested afterwards
		wantJobCalls bool
		wantEvent    wfv1.RunEventType
		wantNew      int
	}{
		{
			name:         "queued run is cancelled at once",
			setup:        func(*testing.T, *store.Store, string) {},
			reason:       "no longer needed",
			wantReason:   "no longer needed",
			wantStatus:   wfv1.RunStatus_RUN_STATUS_CANCELLED,
			wantCancel:   true,
			wantJobCalls: true,
			wantEvent:    wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
			wantNew:      1,
		},
		{
			name:         "default reason",
			setup:        func(*testing.T, *store.Store, string) {},
			reason:       "",
			wantReason:   "cancelled by request",
			wantStatus:   wfv1.RunStatus_RUN_STATUS_CANCELLED,
			wantCancel:   true,
			wantJobCalls: true,
			wantEvent:    wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
			wantNew:      1,
		},
		{
			name: "running run is marked cancel-requested",
			setup: func(t *testing.T, s *store.Store, id string) {
				startRun(t, s, id)
			},
			reason:       "taking too long",
			wantReason:   "taking too long",
			wantStatus:   wfv1.RunStatus_RUN_STATUS_RUNNING,
			wantCancel:   true,
			wantJobCalls: true,
			wantEvent:    wfv1.RunEventType_RUN_EVENT_TYPE_CANCEL_REQUESTED,
			wantNew:      1,
		},
		{
			name: "finished run is unchanged",
			setup: func(t *testing.T, s *store.Store, id string) {
				startRun(t, s, id)
				_, err := s.FinishRun(t.Context(), id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_FAILED})
				require.NoError(t, err)
			},
			reason:     "too late",
			wantReason: "",
			wantStatus: wfv1.RunStatus_RUN_STATUS_FAILED,
			wantEvent:  wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
			wantNew:    0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t)
			q := &fakeQueue{jobID: 42}
			id := createRun(t, s, q, nil).Id
			tt.setup(t, s, id)
			before := getRun(t, s, id)
			eventsBefore := listEvents(t, s, id)

			run, err := s.CancelRun(t.Context(), id, tt.reason, q.cancelJob)
			require.NoError(t, err)
			require.Equal(t, tt.wantStatus, run.Status)
			require.Equal(t, tt.wantCancel, run.CancelRequested)
			require.True(t, proto.Equal(run, getRun(t, s, id)), "returned run differs from the stored one")
			if tt.wantJobCalls {
				require.Equal(t, []int64{42}, q.Cancelled())
			} else {
				require.Empty(t, q.Cancelled())
			}

			reason, err := s.CancelReason(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, tt.wantReason, reason)

			evs := listEvents(t, s, id)
			require.Len(t, evs, len(eventsBefore)+tt.wantNew)
			last := evs[len(evs)-1]
			require.Equal(t, tt.wantEvent, last.Type)
			require.Equal(t, run.LastEventSequence, last.Sequence)

			switch {
			case tt.wantNew == 0:
				require.True(t, proto.Equal(before, run), "finished run changed")
			case tt.wantStatus == wfv1.RunStatus_RUN_STATUS_CANCELLED:
				require.NotNil(t, run.Error)
				require.Equal(t, wfv1.ErrorCategory_ERROR_CATEGORY_CANCELLED, run.Error.Category)
				require.Equal(t, tt.wantReason, run.Error.Message)
				require.NotNil(t, run.EndTime)
				require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, last.GetRun().GetStatus())
			default:
				require.Equal(t, tt.wantReason, last.Message)
				require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, last.Status)
				require.Nil(t, run.EndTime)
			}
		})
	}
}

func TestCancelRunJobErrorRollsBack(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	errCancel := errors.New("river unavailable")
	q := &fakeQueue{jobID: 42, cancelErr: errCancel}
	id := createRun(t, s, q, nil).Id
	before := getRun(t, s, id)

	_, err := s.CancelRun(t.Context(), id, "stop", q.cancelJob)
	require.ErrorIs(t, err, errCancel)
	require.Equal(t, []int64{42}, q.Cancelled())

	after := getRun(t, s, id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_QUEUED, after.Status)
	require.False(t, after.CancelRequested)
	require.True(t, proto.Equal(before, after))
	reason, err := s.CancelReason(t.Context(), id)
	require.NoError(t, err)
	require.Empty(t, reason)
	require.Len(t, listEvents(t, s, id), 1)
}

func TestRequeueRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		setup      func(t *testing.T, s *store.Store, id string)
		wantStatus wfv1.RunStatus
		wantNew    int
	}{
		{
			name:       "running run goes back to the queue",
			setup:      func(t *testing.T, s *store.Store, id string) { startRun(t, s, id) },
			wantStatus: wfv1.RunStatus_RUN_STATUS_QUEUED,
			wantNew:    1,
		},
		{
			name:       "queued run is untouched",
			setup:      func(*testing.T, *store.Store, string) {},
			wantStatus: wfv1.RunStatus_RUN_STATUS_QUEUED,
		},
		{
			name: "finished run is untouched",
			setup: func(t *testing.T, s *store.Store, id string) {
				startRun(t, s, id)
				_, err := s.FinishRun(t.Context(), id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
				require.NoError(t, err)
			},
			wantStatus: wfv1.RunStatus_RUN_STATUS_COMPLETED,
		},
		{
			name: "cancelled run is untouched",
			setup: func(t *testing.T, s *store.Store, id string) {
				_, err := s.CancelRun(t.Context(), id, "", (&fakeQueue{}).cancelJob)
				require.NoError(t, err)
			},
			wantStatus: wfv1.RunStatus_RUN_STATUS_CANCELLED,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t)
			id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
			tt.setup(t, s, id)
			before := getRun(t, s, id)
			eventsBefore := listEvents(t, s, id)

			require.NoError(t, s.RequeueRun(t.Context(), id, "worker shutting down"))
			after := getRun(t, s, id)
			require.Equal(t, tt.wantStatus, after.Status)
			evs := listEvents(t, s, id)
			require.Len(t, evs, len(eventsBefore)+tt.wantNew)
			if tt.wantNew == 0 {
				require.True(t, proto.Equal(before, after))
				return
			}
			last := evs[len(evs)-1]
			require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_REQUEUED, last.Type)
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_QUEUED, last.Status)
			require.Equal(t, "worker shutting down", last.Message)
			require.Equal(t, before.Attempts, after.Attempts)
			require.True(t, proto.Equal(before.StartTime, after.StartTime))
		})
	}
}

func TestListRuns(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	q := &fakeQueue{jobID: 1}

	// Runs 0..4, created a minute apart (4 is the newest). Even runs are
	// env=prod, odd ones env=dev; runs 0 and 1 are team=a. Runs 1 and 3
	// are running.
	ids := make([]string, 5)
	for i := range ids {
		labels := map[string]string{"env": "prod"}
		if i%2 == 1 {
			labels["env"] = "dev"
		}
		if i < 2 {
			labels["team"] = "a"
		}
		ids[i] = createRun(t, s, q, labels).Id
		_, err := pool.Exec(ctx, `UPDATE runs SET created_at = '2026-01-01T00:00:00Z'::timestamptz + make_interval(mins => $2) WHERE id = $1`, ids[i], i)
		require.NoError(t, err)
	}
	startRun(t, s, ids[1])
	startRun(t, s, ids[3])

	queued, running := wfv1.RunStatus_RUN_STATUS_QUEUED, wfv1.RunStatus_RUN_STATUS_RUNNING
	tests := []struct {
		name   string
		filter store.ListRunsFilter
		want   []int
	}{
		{name: "all, newest first", filter: store.ListRunsFilter{}, want: []int{4, 3, 2, 1, 0}},
		{name: "queued", filter: store.ListRunsFilter{Statuses: []wfv1.RunStatus{queued}}, want: []int{4, 2, 0}},
		{name: "running", filter: store.ListRunsFilter{Statuses: []wfv1.RunStatus{running}}, want: []int{3, 1}},
		{name: "queued or running", filter: store.ListRunsFilter{Statuses: []wfv1.RunStatus{queued, running}}, want: []int{4, 3, 2, 1, 0}},
		{name: "completed", filter: store.ListRunsFilter{Statuses: []wfv1.RunStatus{wfv1.RunStatus_RUN_STATUS_COMPLETED}}, want: []int{}},
		{name: "label env=prod", filter: store.ListRunsFilter{Labels: map[string]string{"env": "prod"}}, want: []int{4, 2, 0}},
		{name: "labels env=prod,team=a", filter: store.ListRunsFilter{Labels: map[string]string{"env": "prod", "team": "a"}}, want: []int{0}},
		{name: "label and status", filter: store.ListRunsFilter{Labels: map[string]string{"env": "dev"}, Statuses: []wfv1.RunStatus{running}}, want: []int{3, 1}},
		{name: "unknown label value", filter: store.ListRunsFilter{Labels: map[string]string{"env": "staging"}}, want: []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.filter.PageSize = 10
			runs, next, err := s.ListRuns(t.Context(), tt.filter)
			require.NoError(t, err)
			require.Empty(t, next)
			got := make([]string, len(runs))
			for i, r := range runs {
				got[i] = r.Id
			}
			want := make([]string, len(tt.want))
			for i, n := range tt.want {
				want[i] = ids[n]
			}
			require.Equal(t, want, got)
		})
	}
}

func TestListRunsPagination(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// sameTime gives every run the same created_at, so that only the ID
		// orders them.
		sameTime  bool
		labels    map[string]string
		wantPages int
		wantRuns  int
	}{
		{name: "distinct times", wantPages: 3, wantRuns: 5},
		{name: "equal times", sameTime: true, wantPages: 3, wantRuns: 5},
		{name: "with a filter", labels: map[string]string{"env": "prod"}, wantPages: 2, wantRuns: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, pool := newStore(t)
			ctx := t.Context()
			q := &fakeQueue{jobID: 1}
			var want []string
			for i := range 5 {
				env := map[string]string{"env": "prod"}
				if i%2 == 1 {
					env["env"] = "dev"
				}
				id := createRun(t, s, q, env).Id
				if tt.labels == nil || env["env"] == tt.labels["env"] {
					want = append(want, id)
				}
				offset := i
				if tt.sameTime {
					offset = 0
				}
				_, err := pool.Exec(ctx, `UPDATE runs SET created_at = '2026-01-01T00:00:00Z'::timestamptz + make_interval(secs => $2) WHERE id = $1`, id, offset)
				require.NoError(t, err)
			}

			seen := map[string]int{}
			var order []string
			token, pages := "", 0
			for {
				runs, next, err := s.ListRuns(ctx, store.ListRunsFilter{Labels: tt.labels, PageSize: 2, PageToken: token})
				require.NoError(t, err)
				pages++
				require.LessOrEqual(t, len(runs), 2)
				for _, r := range runs {
					seen[r.Id]++
					order = append(order, r.Id)
				}
				if next == "" {
					break
				}
				require.Less(t, pages, 10, "pagination does not end")
				token = next
			}
			require.Equal(t, tt.wantPages, pages)
			require.Len(t, seen, tt.wantRuns)
			for id, n := range seen {
				require.Equal(t, 1, n, "run %s listed %d times", id, n)
			}
			require.ElementsMatch(t, want, order)

			// The pages together are the single-page listing.
			all, _, err := s.ListRuns(ctx, store.ListRunsFilter{Labels: tt.labels, PageSize: 100})
			require.NoError(t, err)
			allIDs := make([]string, len(all))
			for i, r := range all {
				allIDs[i] = r.Id
			}
			require.Equal(t, allIDs, order)
		})
	}
}

func TestListRunsBadInput(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	createRun(t, s, &fakeQueue{jobID: 1}, nil)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

	tests := []struct {
		name      string
		filter    store.ListRunsFilter
		wantKind  error
		wantField string
	}{
		{name: "garbage token", filter: store.ListRunsFilter{PageToken: "garbage!!"}, wantKind: fault.ErrInvalidArgument, wantField: "page_token"},
		{name: "token not JSON", filter: store.ListRunsFilter{PageToken: b64("not json")}, wantKind: fault.ErrInvalidArgument, wantField: "page_token"},
		{name: "token without ID", filter: store.ListRunsFilter{PageToken: b64(`{"t":"2026-01-01T00:00:00Z"}`)}, wantKind: fault.ErrInvalidArgument, wantField: "page_token"},
		{name: "token with bad ID", filter: store.ListRunsFilter{PageToken: b64(`{"t":"2026-01-01T00:00:00Z","id":"x"}`)}, wantKind: fault.ErrInvalidArgument, wantField: "page_token"},
		{name: "unknown status", filter: store.ListRunsFilter{Statuses: []wfv1.RunStatus{99}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.filter.PageSize = 10
			runs, next, err := s.ListRuns(t.Context(), tt.filter)
			require.Error(t, err)
			require.Nil(t, runs)
			require.Empty(t, next)
			if tt.wantKind == nil {
				return
			}
			require.ErrorIs(t, err, tt.wantKind)
			var reqErr *fault.RequestError
			require.ErrorAs(t, err, &reqErr)
			require.Len(t, reqErr.Violations, 1)
			require.Equal(t, tt.wantField, reqErr.Violations[0].Field)
		})
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	missing := uuid.NewString()
	now := timestamppb.Now()

	tests := []struct {
		name string
		call func(ctx context.Context, id string) error
		ids  []string
	}{
		{
			name: "GetRun",
			call: func(ctx context.Context, id string) error { _, err := s.GetRun(ctx, id); return err },
			ids:  []string{missing, "nope", ""},
		},
		{
			name: "GetMedia",
			call: func(ctx context.Context, id string) error { _, err := s.GetMedia(ctx, id); return err },
			ids:  []string{missing, "nope", ""},
		},
		{
			name: "ListSteps",
			call: func(ctx context.Context, id string) error { _, err := s.ListSteps(ctx, id, 0, 10); return err },
			ids:  []string{missing, "nope"},
		},
		{
			name: "StartRun",
			call: func(ctx context.Context, id string) error { _, _, err := s.StartRun(ctx, id); return err },
			ids:  []string{missing, "nope"},
		},
		{
			name: "FinishRun",
			call: func(ctx context.Context, id string) error {
				_, err := s.FinishRun(ctx, id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
				return err
			},
			ids: []string{missing, "nope"},
		},
		{
			name: "CancelRun",
			call: func(ctx context.Context, id string) error {
				_, err := s.CancelRun(ctx, id, "", (&fakeQueue{}).cancelJob)
				return err
			},
			ids: []string{missing, "nope"},
		},
		{
			name: "RequeueRun",
			call: func(ctx context.Context, id string) error { return s.RequeueRun(ctx, id, "x") },
			ids:  []string{missing, "nope"},
		},
		{
			name: "AppendEvent",
			call: func(ctx context.Context, id string) error {
				_, err := s.AppendEvent(ctx, id, &wfv1.RunEvent{Type: wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_CALLED})
				return err
			},
			ids: []string{missing, "nope"},
		},
		{
			name: "RecordStep",
			call: func(ctx context.Context, id string) error {
				_, err := s.RecordStep(ctx, &wfv1.Step{RunId: id, Number: 1, StartTime: now, EndTime: now}, nil)
				return err
			},
			ids: []string{missing, "nope"},
		},
		{
			name: "RunJob",
			call: func(ctx context.Context, id string) error { _, err := s.RunJob(ctx, id); return err },
			ids:  []string{missing},
		},
		{
			name: "RunTraceContext",
			call: func(ctx context.Context, id string) error { _, err := s.RunTraceContext(ctx, id); return err },
			ids:  []string{missing},
		},
		{
			name: "CancelReason",
			call: func(ctx context.Context, id string) error { _, err := s.CancelReason(ctx, id); return err },
			ids:  []string{missing},
		},
	}
	for _, tt := range tests {
		for _, id := range tt.ids {
			t.Run(tt.name+"/"+id, func(t *testing.T) {
				t.Parallel()
				err := tt.call(t.Context(), id)
				require.ErrorIs(t, err, fault.ErrNotFound)
			})
		}
	}
}

func TestReapLostRuns(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	q := &fakeQueue{riverRows: true}

	type lost struct {
		name      string
		start     bool   // start the run (RUNNING) rather than leave it queued
		finish    bool   // finish the run (COMPLETED) first
		jobState  string // river_job state; "gone" deletes the job
		wantReap  bool
		wantAfter wfv1.RunStatus
	}
	cases := []lost{
		{name: "running, job discarded", start: true, jobState: "discarded", wantReap: true, wantAfter: wfv1.RunStatus_RUN_STATUS_ERROR},
		{name: "running, job cancelled", start: true, jobState: "cancelled", wantReap: true, wantAfter: wfv1.RunStatus_RUN_STATUS_ERROR},
		{name: "running, job completed", start: true, jobState: "completed", wantReap: true, wantAfter: wfv1.RunStatus_RUN_STATUS_ERROR},
		{name: "running, job gone", start: true, jobState: "gone", wantReap: true, wantAfter: wfv1.RunStatus_RUN_STATUS_ERROR},
		{name: "queued, job discarded", jobState: "discarded", wantReap: true, wantAfter: wfv1.RunStatus_RUN_STATUS_ERROR},
		{name: "running, job running", start: true, jobState: "running", wantAfter: wfv1.RunStatus_RUN_STATUS_RUNNING},
		{name: "running, job retryable", start: true, jobState: "retryable", wantAfter: wfv1.RunStatus_RUN_STATUS_RUNNING},
		{name: "running, job available", start: true, jobState: "available", wantAfter: wfv1.RunStatus_RUN_STATUS_RUNNING},
		{name: "queued, job scheduled", jobState: "scheduled", wantAfter: wfv1.RunStatus_RUN_STATUS_QUEUED},
		{name: "completed, job discarded", start: true, finish: true, jobState: "discarded", wantAfter: wfv1.RunStatus_RUN_STATUS_COMPLETED},
	}
	ids := make([]string, len(cases))
	var wantReaped []string
	for i, c := range cases {
		id := createRun(t, s, q, nil).Id
		ids[i] = id
		if c.start {
			startRun(t, s, id)
		}
		if c.finish {
			_, err := s.FinishRun(ctx, id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
			require.NoError(t, err)
		}
		jobID, err := s.RunJob(ctx, id)
		require.NoError(t, err)
		if c.jobState == "gone" {
			_, err := pool.Exec(ctx, `DELETE FROM river_job WHERE id = $1`, jobID)
			require.NoError(t, err)
		} else {
			setJobState(t, pool, jobID, c.jobState)
		}
		if c.wantReap {
			wantReaped = append(wantReaped, id)
		}
	}

	reaped, err := s.ReapLostRuns(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, wantReaped, reaped)

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run := getRun(t, s, ids[i])
			require.Equal(t, c.wantAfter, run.Status)
			if !c.wantReap {
				if !c.finish {
					require.Nil(t, run.Error)
				}
				return
			}
			require.NotNil(t, run.Error)
			require.Equal(t, wfv1.ErrorCategory_ERROR_CATEGORY_WORKER_LOST, run.Error.Category)
			evs := listEvents(t, s, ids[i])
			last := evs[len(evs)-1]
			require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, last.Type)
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_ERROR, last.Status)
		})
	}

	// Reaping again finds nothing.
	reaped, err = s.ReapLostRuns(ctx)
	require.NoError(t, err)
	require.Empty(t, reaped)
}

func TestCollector(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	q := &fakeQueue{riverRows: true}

	// Three queued runs, two running runs (one of whose jobs River is
	// running) and a completed one whose job is completed.
	var ids []string
	for range 6 {
		ids = append(ids, createRun(t, s, q, nil).Id)
	}
	startRun(t, s, ids[3])
	startRun(t, s, ids[4])
	startRun(t, s, ids[5])
	_, err := s.FinishRun(ctx, ids[5], store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)
	for i, state := range map[int]string{4: "running", 5: "completed"} {
		jobID, err := s.RunJob(ctx, ids[i])
		require.NoError(t, err)
		setJobState(t, pool, jobID, state)
	}

	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(store.NewCollector(s)))
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]map[string]float64{}
	for _, mf := range families {
		require.Equal(t, "GAUGE", mf.GetType().String(), mf.GetName())
		got[mf.GetName()] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			require.Len(t, m.GetLabel(), 1)
			got[mf.GetName()][m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	require.Equal(t, map[string]map[string]float64{
		"wayfinder_runs":       {"queued": 3, "running": 2, "awaiting_approval": 0},
		"wayfinder_queue_jobs": {"available": 4, "running": 1, "scheduled": 0, "retryable": 0},
	}, got)
}

// TestFinishedRunTakesNoMoreSteps: FINISHED stays the last event even when a
// stale worker reports after the run ended.
func TestFinishedRunTakesNoMoreSteps(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	id := createRun(t, s, &fakeQueue{jobID: 1}, nil).Id
	startRun(t, s, id)
	_, err := s.FinishRun(ctx, id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_CANCELLED})
	require.NoError(t, err)

	recorded, err := s.RecordStep(ctx, &wfv1.Step{RunId: id, Number: 1, StartTime: timestamppb.Now(), EndTime: timestamppb.Now()}, nil)
	require.NoError(t, err)
	require.False(t, recorded)
	ev, err := s.AppendEvent(ctx, id, &wfv1.RunEvent{Type: wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED})
	require.NoError(t, err)
	require.Nil(t, ev)

	evs, err := s.ListEvents(ctx, id, 0, 100)
	require.NoError(t, err)
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, evs[len(evs)-1].Type)
}
