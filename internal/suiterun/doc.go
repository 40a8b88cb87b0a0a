// Package suiterun executes suite runs: it is the River worker of
// queue.SuiteRunArgs jobs. For each test of a suite run it starts runs (the
// test's attempts) through the run API, waits for them, judges each
// finished run with the test's oracles (internal/suite) and records the
// attempts and the test's outcome in the suite run's results.
//
// # Slices
//
// An execution works a suite run for at most Config.Slice and then snoozes
// its job (river.JobSnooze with a tiny delay) to go on in a fresh
// execution. A snooze does not count as an attempt of the job, so however
// long a suite takes its job never exhausts MaxAttempts; only errors (the
// database unreachable) do, and the last failing attempt ends the suite run
// ERROR. No execution outlives the queue's stuck-job rescue, and a suite run
// of a lost replica goes on elsewhere.
//
// # State
//
// An execution keeps nothing the database does not: a test's result row
// holds its attempts and their run IDs. A new execution reads the results
// and the suite run's snapshot and continues: attempts in flight are
// awaited again, and an attempt's run is created with the request ID
// "suite:<suite run>:<position>:<attempt>", so an execution that created a
// run but was stopped before it recorded it gets the same run back rather
// than a second one. Writes use a context that outlives the execution's, so
// a shutdown never leaves a half-written result.
//
// # Outcomes
//
// A test's attempt passes when suite.Evaluate says so. A failing attempt
// with retries left is followed by another attempt; the test is PASSED when
// its first attempt passed, FLAKY when a later one did, FAILED when all
// failed, and ERROR (without retry) when its run was refused (the test's
// parameters no longer valid: a credential, prompt or tool gone). The
// suite run is PASSED when every test PASSED or was FLAKY, else FAILED.
//
// # Cancel
//
// Once the suite run's cancellation is requested, no attempt starts and
// the runs in flight are cancelled; their attempts are recorded as they
// end, and the suite run ends CANCELLED once none is in flight. A test
// not started is SKIPPED (not run); a test that ran and was not decided
// (interrupted, or between a failed attempt and its retry) is FAILED
// with a message saying the cancellation cut it short: every attempt it
// made failed, and SKIPPED means "not run". An attempt whose run finished
// before the cancellation took effect is judged as usual.
package suiterun
