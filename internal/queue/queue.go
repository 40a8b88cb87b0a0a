// Package queue is Wayfinder's run queue: River on the same Postgres as the
// rest of the data, so a run and its job are created in one transaction.
package queue

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// MaxAttempts is how many times a run's job is attempted: the first
// execution plus resumptions after a lost worker or a failed attempt.
const MaxAttempts = 5

// RunArgs is the job that executes one run.
type RunArgs struct {
	RunID string `json:"run_id"`
	// Timeout is the run's wall-clock limit; the job is cancelled after it.
	Timeout time.Duration `json:"timeout"`
}

// Kind implements river.JobArgs.
func (RunArgs) Kind() string { return "wayfinder.run" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (RunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: MaxAttempts}
}

// Config configures New.
type Config struct {
	// Workers registers the job workers; nil makes an insert-only client
	// (an API-only replica).
	Workers *river.Workers
	// Concurrency is the number of runs executed at once; set it to the
	// browser pool's capacity. Default 1.
	Concurrency int
	// MaxRunTimeout is the longest a run may take. Jobs running longer than
	// this plus RescueGrace are presumed to belong to a dead worker and are
	// rescued. Default 10m.
	MaxRunTimeout time.Duration
	// ID identifies this replica in River's tables. Default: River's.
	ID     string
	Logger *slog.Logger
}

// RescueGrace is added to the longest run timeout to obtain River's rescue
// window: a job still marked running after MaxRunTimeout+RescueGrace has
// lost its worker.
const RescueGrace = 15 * time.Second

// Queue enqueues and (with workers) executes runs.
type Queue struct {
	client *river.Client[pgx.Tx]
	work   bool
}

// New returns a queue backed by pool.
func New(pool *pgxpool.Pool, cfg Config) (*Queue, error) {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.MaxRunTimeout <= 0 {
		cfg.MaxRunTimeout = 10 * time.Minute
	}
	rc := &river.Config{
		ID:                   cfg.ID,
		Logger:               cfg.Logger,
		JobTimeout:           cfg.MaxRunTimeout,
		RescueStuckJobsAfter: cfg.MaxRunTimeout + RescueGrace,
	}
	if cfg.Workers != nil {
		rc.Workers = cfg.Workers
		rc.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Concurrency}}
	}
	client, err := river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return &Queue{client: client, work: cfg.Workers != nil}, nil
}

// EnqueueRunTx inserts the job that executes a run inside tx.
func (q *Queue) EnqueueRunTx(ctx context.Context, tx pgx.Tx, runID string, timeout time.Duration) (int64, error) {
	res, err := q.client.InsertTx(ctx, tx, RunArgs{RunID: runID, Timeout: timeout}, nil)
	if err != nil {
		return 0, fmt.Errorf("insert run job: %w", err)
	}
	return res.Job.ID, nil
}

// CancelJobTx cancels a job inside tx: a waiting job never runs, and the
// context of a running one is cancelled on whichever replica runs it.
func (q *Queue) CancelJobTx(ctx context.Context, tx pgx.Tx, jobID int64) error {
	if _, err := q.client.JobCancelTx(ctx, tx, jobID); err != nil {
		return fmt.Errorf("cancel job %d: %w", jobID, err)
	}
	return nil
}

// Start starts working jobs (when the queue has workers).
func (q *Queue) Start(ctx context.Context) error {
	if !q.work {
		return nil
	}
	return q.client.Start(ctx)
}

// Stop stops fetching new jobs and waits for running ones to finish until
// ctx is done; then it cancels them (their workers hand the runs back to the
// queue) and waits for them to return.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.work {
		return nil
	}
	if err := q.client.Stop(ctx); err == nil {
		return nil
	}
	cancelCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	return q.client.StopAndCancel(cancelCtx)
}
