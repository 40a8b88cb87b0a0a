// Package store keeps Wayfinder's records in Postgres with pgx: runs, steps,
// prompt runs, media (screenshots) and each run's ordered event log.
//
// Every write that a worker may repeat is idempotent, because River delivers
// a job at least once: a step is keyed by (run, number) and recorded with its
// screenshot and its event in one transaction only if it is new; status
// changes are conditional updates that never move a run out of a terminal
// status. Each event takes the next sequence number of its run under the
// run's row lock and is announced with NOTIFY on NotifyChannel in the same
// transaction, so listeners are woken only for committed events.
//
// Schema migrations live in the top-level migrations package and are applied
// by Migrate together with River's own migrations.
package store
