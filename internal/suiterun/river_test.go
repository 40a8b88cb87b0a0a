package suiterun

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/queue"
	"github.com/wayfinder/wayfinder/internal/store"
)

// TestRiverSnoozeIsNotAnAttempt: through a real River client, a suite run
// that takes many more slices than its job has attempts finishes: a
// slice's snooze never counts as an attempt.
func TestRiverSnoozeIsNotAnAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Slice = time.Nanosecond })
	workers := river.NewWorkers()
	river.AddWorker(workers, b.worker)
	client, err := river.NewClient(riverpgxv5.New(b.store.Pool()), &river.Config{
		Workers: workers, Queues: map[string]river.QueueConfig{queue.SuiteQueue: {MaxWorkers: 1}},
		FetchPollInterval: 20 * time.Millisecond, FetchCooldown: 5 * time.Millisecond,
		Logger: b.worker.cfg.Logger,
	})
	require.NoError(t, err)

	tests := []*wfv1.Test{test("a", 0), test("b", 1), test("c", 0), test("d", 0)}
	b.engine.script = map[string][]outcome{"b": {fail, pass}}
	su := &wfv1.Suite{Name: "checkout", Concurrency: 1, Tests: []string{"a", "b", "c", "d"}}
	const maxAttempts = 2
	var jobID int64
	sr, _, err := b.store.CreateSuiteRun(t.Context(), store.NewSuiteRun{Tenant: testTenant, Suite: su, Tests: tests},
		func(ctx context.Context, tx pgx.Tx, id string) (int64, error) {
			res, err := client.InsertTx(ctx, tx, queue.SuiteRunArgs{SuiteRunID: id}, &river.InsertOpts{MaxAttempts: maxAttempts})
			if err != nil {
				return 0, err
			}
			jobID = res.Job.ID
			return jobID, nil
		})
	require.NoError(t, err)

	completed, unsubscribe := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled)
	defer unsubscribe()
	require.NoError(t, client.Start(t.Context()))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(ctx))
	}()
	ev := <-completed
	require.Equal(t, river.EventKindJobCompleted, ev.Kind, "the job ended %s", ev.Kind)
	require.Equal(t, jobID, ev.Job.ID)

	final, results := b.get(t, sr.Id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, final.Status)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FLAKY, results["b"].Outcome)
	job, err := client.JobGet(t.Context(), jobID)
	require.NoError(t, err)
	require.Equal(t, rivertype.JobStateCompleted, job.State)
	require.Equal(t, 1, job.Attempt, "only the last execution counts")
	var meta struct {
		Snoozes int `json:"snoozes"`
	}
	require.NoError(t, json.Unmarshal(job.Metadata, &meta))
	// Five attempts at concurrency 1, each run started by a slice of its
	// own: far more slices than the job's attempts.
	require.GreaterOrEqual(t, meta.Snoozes, 5)
	require.Len(t, b.runsOf(t, sr.Id), 5)
}
