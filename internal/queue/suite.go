package queue

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// SuiteQueue is the River queue of suite runs. It is apart from the runs'
// queue: a suite run's job starts its tests as runs and waits for them, so
// in the runs' queue it would hold the browser slot its own tests need.
const SuiteQueue = "suites"

// SuiteRunArgs is the job that executes a suite run. The job works the
// suite run for a bounded slice of time and then snoozes to go on in a
// fresh execution (all of its state is in the database), so that no
// execution outlives the queue's stuck-job rescue however long the suite
// takes, and a lost replica's suite run goes on elsewhere.
type SuiteRunArgs struct {
	SuiteRunID string `json:"suite_run_id"`
}

// Kind implements river.JobArgs.
func (SuiteRunArgs) Kind() string { return "wayfinder.suite_run" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (SuiteRunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: SuiteQueue, MaxAttempts: 25}
}

// EnqueueSuiteRunTx inserts the job that executes a suite run inside tx and
// returns its ID.
func (q *Queue) EnqueueSuiteRunTx(ctx context.Context, tx pgx.Tx, suiteRunID string) (int64, error) {
	res, err := q.client.InsertTx(ctx, tx, SuiteRunArgs{SuiteRunID: suiteRunID}, nil)
	if err != nil {
		return 0, fmt.Errorf("insert suite run job: %w", err)
	}
	return res.Job.ID, nil
}

// ServeSuites makes this replica work suite runs, at most maxWorkers at
// once. The queue must have been made with workers that include the suite
// run worker (Config.Workers).
func (q *Queue) ServeSuites(maxWorkers int) error {
	if err := q.client.Queues().Add(SuiteQueue, river.QueueConfig{MaxWorkers: maxWorkers}); err != nil {
		return fmt.Errorf("add suite queue: %w", err)
	}
	return nil
}
