package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// Tests, suites and suite runs (TestService). Tests and suites are kept as
// protojson without their name and timestamps, which are columns. A suite
// run snapshots its suite and tests and keeps one result row per test; its
// summary is counted from those rows when it is read. Every change of a
// suite run is announced on NotifyChannel with SuiteRunKey.

// SuiteRunKey is the NOTIFY payload (and events.Hub key) that announces a
// change of suite run id: its status, cancellation or a test's result.
func SuiteRunKey(id string) string { return "suite:" + id }

// suiteRunStatuses maps suite run statuses to their stored form.
var suiteRunStatuses = map[wfv1.SuiteRunStatus]string{
	wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED:    "queued",
	wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING:   "running",
	wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED:    "passed",
	wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED:    "failed",
	wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED: "cancelled",
	wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR:     "error",
}

// testOutcomes maps test outcomes to their stored form.
var testOutcomes = map[wfv1.TestOutcome]string{
	wfv1.TestOutcome_TEST_OUTCOME_PENDING: "pending",
	wfv1.TestOutcome_TEST_OUTCOME_RUNNING: "running",
	wfv1.TestOutcome_TEST_OUTCOME_PASSED:  "passed",
	wfv1.TestOutcome_TEST_OUTCOME_FAILED:  "failed",
	wfv1.TestOutcome_TEST_OUTCOME_FLAKY:   "flaky",
	wfv1.TestOutcome_TEST_OUTCOME_ERROR:   "error",
	wfv1.TestOutcome_TEST_OUTCOME_SKIPPED: "skipped",
}

// SuiteRunFinal reports whether a suite run in status s has ended for good.
func SuiteRunFinal(s wfv1.SuiteRunStatus) bool {
	switch s {
	case wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED,
		wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR:
		return true
	}
	return false
}

var decodeLenient = protojson.UnmarshalOptions{DiscardUnknown: true}

// ---- Tests ----

const testColumns = `name, spec, created_at, updated_at`

// encodeTest returns t's stored spec (without name and timestamps) and
// its tags.
func encodeTest(t *wfv1.Test) ([]byte, []string, error) {
	c := proto.Clone(t).(*wfv1.Test)
	c.Name, c.CreateTime, c.UpdateTime = "", nil, nil
	raw, err := protojson.Marshal(c)
	if err != nil {
		return nil, nil, fmt.Errorf("encode test %q: %w", t.GetName(), err)
	}
	return raw, nonNilStrings(t.GetTags()), nil
}

func scanTest(row pgx.Row) (*wfv1.Test, error) {
	var (
		name             string
		spec             []byte
		created, updated time.Time
	)
	if err := row.Scan(&name, &spec, &created, &updated); err != nil {
		return nil, err
	}
	t := &wfv1.Test{}
	if err := decodeLenient.Unmarshal(spec, t); err != nil {
		return nil, fmt.Errorf("decode test %q: %w", name, err)
	}
	t.Name, t.CreateTime, t.UpdateTime = name, timestamppb.New(created), timestamppb.New(updated)
	return t, nil
}

// CreateTest stores a new test (validated by the caller) of the tenant and
// returns it as stored. A taken name wraps fault.ErrAlreadyExists, an
// unknown tenant fault.ErrNotFound.
func (s *Store) CreateTest(ctx context.Context, tenantID string, t *wfv1.Test) (*wfv1.Test, error) {
	spec, tags, err := encodeTest(t)
	if err != nil {
		return nil, err
	}
	out, err := scanTest(s.pool.QueryRow(ctx, `
		INSERT INTO tests (tenant_id, name, spec, tags) VALUES ($1, $2, $3, $4)
		RETURNING `+testColumns, tenantID, t.GetName(), spec, tags))
	if err != nil {
		return nil, writeError("test", tenantID, t.GetName(), err)
	}
	return out, nil
}

// UpdateTest replaces the tenant's test t.Name and returns it as stored.
// A missing test wraps fault.ErrNotFound unless allowMissing, which
// creates it.
func (s *Store) UpdateTest(ctx context.Context, tenantID string, t *wfv1.Test, allowMissing bool) (*wfv1.Test, error) {
	spec, tags, err := encodeTest(t)
	if err != nil {
		return nil, err
	}
	return upsertTest(ctx, s.pool, tenantID, t.GetName(), spec, tags, allowMissing)
}

func upsertTest(ctx context.Context, q querier, tenantID, name string, spec []byte, tags []string, allowMissing bool) (*wfv1.Test, error) {
	query := `UPDATE tests SET spec = $3, tags = $4, updated_at = now()
		WHERE tenant_id = $1 AND name = $2 RETURNING ` + testColumns
	if allowMissing {
		query = `INSERT INTO tests (tenant_id, name, spec, tags) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant_id, name) DO UPDATE SET spec = EXCLUDED.spec, tags = EXCLUDED.tags, updated_at = now()
			RETURNING ` + testColumns
	}
	out, err := scanTest(q.QueryRow(ctx, query, tenantID, name, spec, tags))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("test %q: %w", name, errNotFound)
	}
	if err != nil {
		return nil, writeError("test", tenantID, name, err)
	}
	return out, nil
}

// GetTest returns the tenant's test name, or an error wrapping
// fault.ErrNotFound.
func (s *Store) GetTest(ctx context.Context, tenantID, name string) (*wfv1.Test, error) {
	t, err := scanTest(s.pool.QueryRow(ctx, `SELECT `+testColumns+` FROM tests WHERE tenant_id = $1 AND name = $2`, tenantID, name))
	if err != nil {
		return nil, notFound("test", name, err)
	}
	return t, nil
}

// ListTests returns up to pageSize (default 50) of the tenant's tests by
// name after the page token, only those tagged tag when it is not empty,
// and the next page's token ("" on the last page). A malformed token is an
// invalid argument.
func (s *Store) ListTests(ctx context.Context, tenantID, tag string, pageSize int, pageToken string) ([]*wfv1.Test, string, error) {
	after, err := decodeNameToken(testTokenPrefix, pageToken)
	if err != nil {
		return nil, "", err
	}
	if pageSize < 1 {
		pageSize = 50
	}
	rows, err := s.pool.Query(ctx, `SELECT `+testColumns+` FROM tests
		WHERE tenant_id = $1 AND name > $2 AND ($3 = '' OR tags @> ARRAY[$3])
		ORDER BY name LIMIT $4`, tenantID, after, tag, pageSize+1)
	if err != nil {
		return nil, "", fmt.Errorf("list tests: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.Test, error) { return scanTest(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list tests: %w", err)
	}
	next := ""
	if len(out) > pageSize {
		out = out[:pageSize]
		next = encodeNameToken(testTokenPrefix, out[len(out)-1].Name)
	}
	return out, next, nil
}

// DeleteTest deletes the tenant's test name. While a suite lists it the
// error wraps fault.ErrFailedPrecondition (naming the suites); a missing
// test wraps fault.ErrNotFound.
func (s *Store) DeleteTest(ctx context.Context, tenantID, name string) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		// Deleting first takes the row's lock: a suite being written that
		// lists the test (and holds it FOR SHARE) commits first and is
		// seen below, or waits and then finds the test gone.
		tag, err := tx.Exec(ctx, `DELETE FROM tests WHERE tenant_id = $1 AND name = $2`, tenantID, name)
		if err != nil {
			return fmt.Errorf("delete test %q: %w", name, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("test %q: %w", name, errNotFound)
		}
		rows, err := tx.Query(ctx, `SELECT name FROM suites WHERE tenant_id = $1 AND test_names @> ARRAY[$2]
			ORDER BY name LIMIT 5`, tenantID, name)
		if err != nil {
			return fmt.Errorf("delete test %q: %w", name, err)
		}
		suites, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("delete test %q: %w", name, err)
		}
		if len(suites) > 0 {
			return fmt.Errorf("%w: test %q is listed by suites %s; remove it from them first",
				fault.ErrFailedPrecondition, name, strings.Join(suites, ", "))
		}
		return nil
	})
}

// ---- Suites ----

const suiteColumns = `name, spec, created_at, updated_at`

func encodeSuite(su *wfv1.Suite) ([]byte, []string, error) {
	c := proto.Clone(su).(*wfv1.Suite)
	c.Name, c.CreateTime, c.UpdateTime = "", nil, nil
	raw, err := protojson.Marshal(c)
	if err != nil {
		return nil, nil, fmt.Errorf("encode suite %q: %w", su.GetName(), err)
	}
	return raw, nonNilStrings(su.GetTests()), nil
}

func scanSuite(row pgx.Row) (*wfv1.Suite, error) {
	var (
		name             string
		spec             []byte
		created, updated time.Time
	)
	if err := row.Scan(&name, &spec, &created, &updated); err != nil {
		return nil, err
	}
	su := &wfv1.Suite{}
	if err := decodeLenient.Unmarshal(spec, su); err != nil {
		return nil, fmt.Errorf("decode suite %q: %w", name, err)
	}
	su.Name, su.CreateTime, su.UpdateTime = name, timestamppb.New(created), timestamppb.New(updated)
	return su, nil
}

// checkSuiteTests holds the tests su lists FOR SHARE until tx ends (so
// that none is deleted meanwhile) and reports those that do not exist as
// violations of suite.tests[i].
func checkSuiteTests(ctx context.Context, tx pgx.Tx, tenantID string, su *wfv1.Suite) error {
	rows, err := tx.Query(ctx, `SELECT name FROM tests WHERE tenant_id = $1 AND name = ANY($2) FOR SHARE`,
		tenantID, nonNilStrings(su.GetTests()))
	if err != nil {
		return fmt.Errorf("load the tests of suite %q: %w", su.GetName(), err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("load the tests of suite %q: %w", su.GetName(), err)
	}
	var missing []fault.FieldViolation
	for i, name := range su.GetTests() {
		if !slices.Contains(found, name) {
			missing = append(missing, fault.FieldViolation{
				Field: fmt.Sprintf("suite.tests[%d]", i), Description: fmt.Sprintf("no test named %q", name)})
		}
	}
	if len(missing) > 0 {
		return &fault.RequestError{Kind: fault.ErrInvalidArgument, Violations: missing}
	}
	return nil
}

// CreateSuite stores a new suite (validated by the caller) of the tenant
// and returns it as stored. A taken name wraps fault.ErrAlreadyExists; a
// listed test that does not exist is an invalid argument.
func (s *Store) CreateSuite(ctx context.Context, tenantID string, su *wfv1.Suite) (*wfv1.Suite, error) {
	spec, names, err := encodeSuite(su)
	if err != nil {
		return nil, err
	}
	var out *wfv1.Suite
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		if err := checkSuiteTests(ctx, tx, tenantID, su); err != nil {
			return err
		}
		out, err = scanSuite(tx.QueryRow(ctx, `
			INSERT INTO suites (tenant_id, name, spec, test_names) VALUES ($1, $2, $3, $4)
			RETURNING `+suiteColumns, tenantID, su.GetName(), spec, names))
		if err != nil {
			return writeError("suite", tenantID, su.GetName(), err)
		}
		return nil
	})
	return out, err
}

// UpdateSuite replaces the tenant's suite su.Name and returns it as
// stored. A missing suite wraps fault.ErrNotFound unless allowMissing,
// which creates it; a listed test that does not exist is an invalid
// argument.
func (s *Store) UpdateSuite(ctx context.Context, tenantID string, su *wfv1.Suite, allowMissing bool) (*wfv1.Suite, error) {
	var out *wfv1.Suite
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = upsertSuite(ctx, tx, tenantID, su, allowMissing)
		return err
	})
	return out, err
}

func upsertSuite(ctx context.Context, tx pgx.Tx, tenantID string, su *wfv1.Suite, allowMissing bool) (*wfv1.Suite, error) {
	spec, names, err := encodeSuite(su)
	if err != nil {
		return nil, err
	}
	if !allowMissing {
		// A missing suite is NOT_FOUND whatever it lists.
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM suites WHERE tenant_id = $1 AND name = $2 FOR UPDATE`, tenantID, su.GetName()).Scan(&one)
		if err != nil {
			return nil, notFound("suite", su.GetName(), err)
		}
	}
	if err := checkSuiteTests(ctx, tx, tenantID, su); err != nil {
		return nil, err
	}
	query := `UPDATE suites SET spec = $3, test_names = $4, updated_at = now()
		WHERE tenant_id = $1 AND name = $2 RETURNING ` + suiteColumns
	if allowMissing {
		query = `INSERT INTO suites (tenant_id, name, spec, test_names) VALUES ($1, $2, $3, $4)
			ON CONFLICT (tenant_id, name) DO UPDATE SET spec = EXCLUDED.spec, test_names = EXCLUDED.test_names, updated_at = now()
			RETURNING ` + suiteColumns
	}
	out, err := scanSuite(tx.QueryRow(ctx, query, tenantID, su.GetName(), spec, names))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("suite %q: %w", su.GetName(), errNotFound)
	}
	if err != nil {
		return nil, writeError("suite", tenantID, su.GetName(), err)
	}
	return out, nil
}

// GetSuite returns the tenant's suite name, or an error wrapping
// fault.ErrNotFound.
func (s *Store) GetSuite(ctx context.Context, tenantID, name string) (*wfv1.Suite, error) {
	su, err := scanSuite(s.pool.QueryRow(ctx, `SELECT `+suiteColumns+` FROM suites WHERE tenant_id = $1 AND name = $2`, tenantID, name))
	if err != nil {
		return nil, notFound("suite", name, err)
	}
	return su, nil
}

// ListSuites returns up to pageSize (default 50) of the tenant's suites by
// name after the page token, and the next page's token ("" on the last
// page).
func (s *Store) ListSuites(ctx context.Context, tenantID string, pageSize int, pageToken string) ([]*wfv1.Suite, string, error) {
	after, err := decodeNameToken(suiteTokenPrefix, pageToken)
	if err != nil {
		return nil, "", err
	}
	if pageSize < 1 {
		pageSize = 50
	}
	rows, err := s.pool.Query(ctx, `SELECT `+suiteColumns+` FROM suites
		WHERE tenant_id = $1 AND name > $2 ORDER BY name LIMIT $3`, tenantID, after, pageSize+1)
	if err != nil {
		return nil, "", fmt.Errorf("list suites: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.Suite, error) { return scanSuite(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list suites: %w", err)
	}
	next := ""
	if len(out) > pageSize {
		out = out[:pageSize]
		next = encodeNameToken(suiteTokenPrefix, out[len(out)-1].Name)
	}
	return out, next, nil
}

// DeleteSuite deletes the tenant's suite name (its tests and its suite
// runs stay); a missing suite wraps fault.ErrNotFound.
func (s *Store) DeleteSuite(ctx context.Context, tenantID, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM suites WHERE tenant_id = $1 AND name = $2`, tenantID, name)
	if err != nil {
		return fmt.Errorf("delete suite %q: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("suite %q: %w", name, errNotFound)
	}
	return nil
}

// ImportSuite stores tests and su (validated by the caller) in one
// transaction, replacing the tenant's tests and suite of the same names,
// and returns them as stored. Nothing is stored when any part fails.
func (s *Store) ImportSuite(ctx context.Context, tenantID string, su *wfv1.Suite, tests []*wfv1.Test) (*wfv1.Suite, []*wfv1.Test, error) {
	var (
		outSuite *wfv1.Suite
		outTests []*wfv1.Test
	)
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		outTests = make([]*wfv1.Test, 0, len(tests))
		for _, t := range tests {
			spec, tags, err := encodeTest(t)
			if err != nil {
				return err
			}
			stored, err := upsertTest(ctx, tx, tenantID, t.GetName(), spec, tags, true)
			if err != nil {
				return err
			}
			outTests = append(outTests, stored)
		}
		var err error
		outSuite, err = upsertSuite(ctx, tx, tenantID, su, true)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return outSuite, outTests, nil
}

// writeError classifies a failed insert or update of a named record.
func writeError(what, tenantID, name string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return fmt.Errorf("%s %q: %w", what, name, fault.ErrAlreadyExists)
		case "23503":
			return fmt.Errorf("tenant %q: %w", tenantID, errNotFound)
		}
	}
	return fmt.Errorf("store %s %q: %w", what, name, err)
}

// Page tokens of the test and suite lists: the last name listed.
const (
	testTokenPrefix  = "t:"
	suiteTokenPrefix = "s:"
)

func encodeNameToken(prefix, last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(prefix + last))
}

func decodeNameToken(prefix, token string) (string, error) {
	if token == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !strings.HasPrefix(string(b), prefix) {
		return "", malformedPromptToken()
	}
	return strings.TrimPrefix(string(b), prefix), nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ---- Suite runs ----

// NewSuiteRun is a suite run to be created.
type NewSuiteRun struct {
	// Tenant owns the suite run.
	Tenant string
	// RequestID is the caller's idempotency key (unique per tenant);
	// empty for none.
	RequestID string
	// Suite and Tests (the suite's tests left by the tag filter, in the
	// suite's order) are the snapshot the suite run executes.
	Suite *wfv1.Suite
	Tests []*wfv1.Test
	// Tags is the tag filter it was started with.
	Tags []string
}

// suiteSnapshot is the stored form of suite_runs.snapshot.
type suiteSnapshot struct {
	Suite json.RawMessage   `json:"suite"`
	Tests []json.RawMessage `json:"tests"`
}

const suiteRunColumns = `id, tenant_id, suite_name, coalesce(request_id, ''), status, tags, cancel_requested,
	error_message, created_at, started_at, ended_at`

// CreateSuiteRun stores a queued suite run with one PENDING result per
// test, and its job (through enqueue), in one transaction. When
// nr.RequestID names an existing suite run of the tenant, that one is
// returned with created false and nothing is written.
func (s *Store) CreateSuiteRun(ctx context.Context, nr NewSuiteRun, enqueue EnqueueFunc) (sr *wfv1.SuiteRun, created bool, err error) {
	var snap suiteSnapshot
	if snap.Suite, err = protojson.Marshal(nr.Suite); err != nil {
		return nil, false, fmt.Errorf("encode suite snapshot: %w", err)
	}
	results := make([][]byte, len(nr.Tests))
	for i, t := range nr.Tests {
		raw, err := protojson.Marshal(t)
		if err != nil {
			return nil, false, fmt.Errorf("encode test snapshot: %w", err)
		}
		snap.Tests = append(snap.Tests, raw)
		threshold := 1.0
		if t.PassThreshold != nil {
			threshold = t.GetPassThreshold()
		}
		if results[i], err = protojson.Marshal(&wfv1.TestResult{
			Test: t.GetName(), Outcome: wfv1.TestOutcome_TEST_OUTCOME_PENDING, PassThreshold: threshold,
		}); err != nil {
			return nil, false, fmt.Errorf("encode test result: %w", err)
		}
	}
	snapshot, err := json.Marshal(snap)
	if err != nil {
		return nil, false, fmt.Errorf("encode suite snapshot: %w", err)
	}
	id := uuid.NewString()
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO suite_runs (id, tenant_id, suite_name, request_id, status, tags, snapshot)
			VALUES ($1, $2, $3, NULLIF($4, ''), 'queued', $5, $6)
			ON CONFLICT (tenant_id, request_id) WHERE request_id IS NOT NULL DO NOTHING`,
			id, nr.Tenant, nr.Suite.GetName(), nr.RequestID, nonNilStrings(nr.Tags), snapshot)
		if err != nil {
			return writeError("suite run of suite", nr.Tenant, nr.Suite.GetName(), err)
		}
		if tag.RowsAffected() == 0 {
			var existing string
			if err := tx.QueryRow(ctx, `SELECT id::text FROM suite_runs WHERE tenant_id = $1 AND request_id = $2`,
				nr.Tenant, nr.RequestID).Scan(&existing); err != nil {
				return fmt.Errorf("load suite run for request %q: %w", nr.RequestID, err)
			}
			sr, err = getSuiteRun(ctx, tx, existing, false)
			return err
		}
		for i, t := range nr.Tests {
			if _, err := tx.Exec(ctx, `
				INSERT INTO suite_test_results (suite_run_id, position, test_name, outcome, result)
				VALUES ($1, $2, $3, 'pending', $4)`, id, i, t.GetName(), results[i]); err != nil {
				return fmt.Errorf("insert test result: %w", err)
			}
		}
		jobID, err := enqueue(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("enqueue suite run: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE suite_runs SET job_id = $2 WHERE id = $1`, id, jobID); err != nil {
			return fmt.Errorf("record job of suite run: %w", err)
		}
		if err := notifySuiteRun(ctx, tx, id); err != nil {
			return err
		}
		sr, err = getSuiteRun(ctx, tx, id, false)
		created = err == nil
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return sr, created, nil
}

// SuiteRunByRequest returns the tenant's suite run created with request
// ID requestID, or an error wrapping fault.ErrNotFound.
func (s *Store) SuiteRunByRequest(ctx context.Context, tenantID, requestID string) (*wfv1.SuiteRun, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT id::text FROM suite_runs WHERE tenant_id = $1 AND request_id = $2`,
		tenantID, requestID).Scan(&id)
	if err != nil {
		return nil, notFound("suite run for request", requestID, err)
	}
	return s.GetSuiteRun(ctx, id)
}

// GetSuiteRun returns suite run id with its results (in order) and
// summary, or an error wrapping fault.ErrNotFound. Its TenantId is set:
// the caller checks it.
func (s *Store) GetSuiteRun(ctx context.Context, id string) (*wfv1.SuiteRun, error) {
	var sr *wfv1.SuiteRun
	// One snapshot of the run and its results.
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		sr, err = getSuiteRun(ctx, tx, id, false)
		return err
	})
	return sr, err
}

// getSuiteRun reads a suite run and its results in tx, locking the suite
// run's row when lock is set.
func getSuiteRun(ctx context.Context, tx pgx.Tx, id string, lock bool) (*wfv1.SuiteRun, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("suite run %q: %w", id, errNotFound)
	}
	query := `SELECT ` + suiteRunColumns + ` FROM suite_runs WHERE id = $1`
	if lock {
		query += ` FOR UPDATE`
	}
	sr, err := scanSuiteRun(tx.QueryRow(ctx, query, id))
	if err != nil {
		return nil, notFound("suite run", id, err)
	}
	rows, err := tx.Query(ctx, `SELECT result FROM suite_test_results WHERE suite_run_id = $1 ORDER BY position`, id)
	if err != nil {
		return nil, fmt.Errorf("load results of suite run %s: %w", id, err)
	}
	sr.Results, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.TestResult, error) {
		var raw []byte
		if err := r.Scan(&raw); err != nil {
			return nil, err
		}
		res := &wfv1.TestResult{}
		if err := decodeLenient.Unmarshal(raw, res); err != nil {
			return nil, fmt.Errorf("decode test result: %w", err)
		}
		return res, nil
	})
	if err != nil {
		return nil, fmt.Errorf("load results of suite run %s: %w", id, err)
	}
	sr.Summary = summarize(sr.Results)
	return sr, nil
}

// scanSuiteRun reads the suiteRunColumns of row, and its further columns
// into extra.
func scanSuiteRun(row pgx.Row, extra ...any) (*wfv1.SuiteRun, error) {
	var (
		sr             wfv1.SuiteRun
		id             uuid.UUID
		status         string
		created        time.Time
		started, ended *time.Time
	)
	dest := append([]any{&id, &sr.TenantId, &sr.Suite, &sr.RequestId, &status, &sr.Tags, &sr.CancelRequested,
		&sr.Error, &created, &started, &ended}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	sr.Id = id.String()
	for k, v := range suiteRunStatuses {
		if v == status {
			sr.Status = k
		}
	}
	sr.CreateTime = timestamppb.New(created)
	if started != nil {
		sr.StartTime = timestamppb.New(*started)
	}
	if ended != nil {
		sr.EndTime = timestamppb.New(*ended)
	}
	return &sr, nil
}

// summarize counts results by outcome.
func summarize(results []*wfv1.TestResult) *wfv1.SuiteRunSummary {
	counts := map[string]int32{}
	for _, r := range results {
		counts[testOutcomes[r.GetOutcome()]]++
	}
	return summaryOf(counts, int32(len(results)))
}

func summaryOf(counts map[string]int32, total int32) *wfv1.SuiteRunSummary {
	return &wfv1.SuiteRunSummary{
		Total: total, Passed: counts["passed"], Failed: counts["failed"], Flaky: counts["flaky"],
		Errored: counts["error"], Skipped: counts["skipped"], Pending: counts["pending"], Running: counts["running"],
	}
}

// ListSuiteRunsFilter selects suite runs for ListSuiteRuns.
type ListSuiteRunsFilter struct {
	// Tenant keeps only the tenant's suite runs.
	Tenant string
	// Suite, when set, keeps only that suite's runs.
	Suite string
	// PageSize is the maximum number of suite runs returned. Default 50.
	PageSize int
	// PageToken continues a previous listing.
	PageToken string
}

// ListSuiteRuns returns suite runs newest first, with their summaries but
// not their results, and the token of the next page (empty on the last
// page). A malformed page token is an invalid argument.
func (s *Store) ListSuiteRuns(ctx context.Context, f ListSuiteRunsFilter) ([]*wfv1.SuiteRun, string, error) {
	if f.PageSize < 1 {
		f.PageSize = 50
	}
	var afterTime *time.Time
	var afterID *string
	if f.PageToken != "" {
		cur, err := decodeCursor(f.PageToken)
		if err != nil {
			return nil, "", err
		}
		afterTime, afterID = &cur.Created, &cur.ID
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+suiteRunColumns+`,
			coalesce((SELECT jsonb_object_agg(outcome, n) FROM (
				SELECT outcome, count(*) AS n FROM suite_test_results WHERE suite_run_id = suite_runs.id GROUP BY outcome) c), '{}')
		FROM suite_runs
		WHERE tenant_id = $1 AND ($2 = '' OR suite_name = $2)
		  AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4::uuid))
		ORDER BY created_at DESC, id DESC
		LIMIT $5`, f.Tenant, f.Suite, afterTime, afterID, f.PageSize+1)
	if err != nil {
		return nil, "", fmt.Errorf("list suite runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.SuiteRun, error) {
		var counts map[string]int32
		sr, err := scanSuiteRun(r, &counts)
		if err != nil {
			return nil, err
		}
		var total int32
		for _, n := range counts {
			total += n
		}
		sr.Summary = summaryOf(counts, total)
		return sr, nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list suite runs: %w", err)
	}
	next := ""
	if len(out) > f.PageSize {
		out = out[:f.PageSize]
		last := out[len(out)-1]
		next = encodeCursor(pageCursor{Created: last.CreateTime.AsTime(), ID: last.Id})
	}
	return out, next, nil
}

// SuiteRunSpec is what a suite run executes: its snapshot.
type SuiteRunSpec struct {
	// Tenant owns the suite run.
	Tenant string
	// Suite and Tests are as they were when the suite run was created;
	// Tests[i] is the test of result position i.
	Suite *wfv1.Suite
	Tests []*wfv1.Test
}

// SuiteRunSpec returns suite run id's snapshot, or an error wrapping
// fault.ErrNotFound.
func (s *Store) SuiteRunSpec(ctx context.Context, id string) (*SuiteRunSpec, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("suite run %q: %w", id, errNotFound)
	}
	var (
		spec SuiteRunSpec
		raw  []byte
	)
	if err := s.pool.QueryRow(ctx, `SELECT tenant_id, snapshot FROM suite_runs WHERE id = $1`, id).Scan(&spec.Tenant, &raw); err != nil {
		return nil, notFound("suite run", id, err)
	}
	var snap suiteSnapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		return nil, fmt.Errorf("decode snapshot of suite run %s: %w", id, err)
	}
	spec.Suite = &wfv1.Suite{}
	if err := decodeLenient.Unmarshal(snap.Suite, spec.Suite); err != nil {
		return nil, fmt.Errorf("decode suite of suite run %s: %w", id, err)
	}
	for _, t := range snap.Tests {
		test := &wfv1.Test{}
		if err := decodeLenient.Unmarshal(t, test); err != nil {
			return nil, fmt.Errorf("decode test of suite run %s: %w", id, err)
		}
		spec.Tests = append(spec.Tests, test)
	}
	return &spec, nil
}

// notifySuiteRun announces a change of suite run id when tx commits.
func notifySuiteRun(ctx context.Context, tx pgx.Tx, id string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, SuiteRunKey(id)); err != nil {
		return fmt.Errorf("notify suite run change: %w", err)
	}
	return nil
}

// updateSuiteRun locks suite run id for the length of a transaction and,
// unless it has ended, calls fn with it; then it announces the change and
// returns the suite run as it is at the end. A suite run that has ended is
// returned unchanged without calling fn. fn returning false changed
// nothing (no announcement).
func (s *Store) updateSuiteRun(ctx context.Context, id string, fn func(tx pgx.Tx, sr *wfv1.SuiteRun) (changed bool, err error)) (*wfv1.SuiteRun, error) {
	var out *wfv1.SuiteRun
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		sr, err := getSuiteRun(ctx, tx, id, true)
		if err != nil {
			return err
		}
		out = sr
		if SuiteRunFinal(sr.Status) {
			return nil
		}
		changed, err := fn(tx, sr)
		if err != nil || !changed {
			return err
		}
		if err := notifySuiteRun(ctx, tx, id); err != nil {
			return err
		}
		out, err = getSuiteRun(ctx, tx, id, false)
		return err
	})
	return out, err
}

// StartSuiteRun moves a QUEUED suite run to RUNNING and returns it, and
// whether the caller should execute it: a suite run already RUNNING (a
// resumed slice) is executed as it is; one that has ended is not.
func (s *Store) StartSuiteRun(ctx context.Context, id string) (sr *wfv1.SuiteRun, execute bool, err error) {
	sr, err = s.updateSuiteRun(ctx, id, func(tx pgx.Tx, sr *wfv1.SuiteRun) (bool, error) {
		if sr.Status != wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED {
			return false, nil
		}
		if _, err := tx.Exec(ctx, `UPDATE suite_runs SET status = 'running', started_at = coalesce(started_at, now())
			WHERE id = $1`, id); err != nil {
			return false, fmt.Errorf("start suite run %s: %w", id, err)
		}
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	return sr, !SuiteRunFinal(sr.Status), nil
}

// PutTestResult records the result of the test at position (0-based, the
// suite's order) of suite run id and announces it. The results of a suite
// run that has ended do not change: then nothing is written. A position
// the suite run does not have wraps fault.ErrNotFound.
func (s *Store) PutTestResult(ctx context.Context, id string, position int, r *wfv1.TestResult) error {
	outcome, ok := testOutcomes[r.GetOutcome()]
	if !ok {
		return fmt.Errorf("test result of suite run %s: outcome %v: %w", id, r.GetOutcome(), fault.ErrInvalidArgument)
	}
	_, err := s.updateSuiteRun(ctx, id, func(tx pgx.Tx, sr *wfv1.SuiteRun) (bool, error) {
		if position < 0 || position >= len(sr.Results) {
			return false, fmt.Errorf("suite run %s has no test at position %d: %w", id, position, errNotFound)
		}
		res := proto.Clone(r).(*wfv1.TestResult)
		res.Test = sr.Results[position].GetTest()
		raw, err := protojson.Marshal(res)
		if err != nil {
			return false, fmt.Errorf("encode test result: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE suite_test_results SET outcome = $3, result = $4, updated_at = now()
			WHERE suite_run_id = $1 AND position = $2`, id, position, outcome, raw); err != nil {
			return false, fmt.Errorf("store test result: %w", err)
		}
		return true, nil
	})
	return err
}

// FinishSuiteRun ends suite run id with a final status (errMsg says why
// it ended ERROR) and returns it. Results not final yet (PENDING,
// RUNNING) become SKIPPED. A suite run that has ended is returned
// unchanged.
func (s *Store) FinishSuiteRun(ctx context.Context, id string, status wfv1.SuiteRunStatus, errMsg string) (*wfv1.SuiteRun, error) {
	if !SuiteRunFinal(status) {
		return nil, fmt.Errorf("finish suite run %s: status %v is not final: %w", id, status, fault.ErrInvalidArgument)
	}
	return s.updateSuiteRun(ctx, id, func(tx pgx.Tx, sr *wfv1.SuiteRun) (bool, error) {
		return true, finishSuiteRunLocked(ctx, tx, sr, status, errMsg,
			"not finished: the suite run ended "+strings.TrimPrefix(status.String(), "SUITE_RUN_STATUS_"))
	})
}

func finishSuiteRunLocked(ctx context.Context, tx pgx.Tx, sr *wfv1.SuiteRun, status wfv1.SuiteRunStatus, errMsg, skipMsg string) error {
	if _, err := tx.Exec(ctx, `UPDATE suite_runs SET status = $2, error_message = $3, ended_at = now() WHERE id = $1`,
		sr.Id, suiteRunStatuses[status], errMsg); err != nil {
		return fmt.Errorf("finish suite run %s: %w", sr.Id, err)
	}
	for i, r := range sr.Results {
		if o := r.GetOutcome(); o != wfv1.TestOutcome_TEST_OUTCOME_PENDING && o != wfv1.TestOutcome_TEST_OUTCOME_RUNNING {
			continue
		}
		res := proto.Clone(r).(*wfv1.TestResult)
		res.Outcome, res.Message = wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, skipMsg
		if res.StartTime != nil && res.EndTime == nil {
			res.EndTime = timestamppb.Now()
		}
		raw, err := protojson.Marshal(res)
		if err != nil {
			return fmt.Errorf("encode test result: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE suite_test_results SET outcome = 'skipped', result = $3, updated_at = now()
			WHERE suite_run_id = $1 AND position = $2`, sr.Id, i, raw); err != nil {
			return fmt.Errorf("skip test result: %w", err)
		}
	}
	return nil
}

// CancelSuiteRun requests that suite run id stop and returns it. A QUEUED
// suite run ends CANCELLED at once, its tests SKIPPED and its job
// cancelled through cancelJob in the same transaction; a RUNNING one is
// marked cancel_requested (its executor cancels its runs and ends it); one
// that has ended is returned unchanged.
func (s *Store) CancelSuiteRun(ctx context.Context, id string, cancelJob CancelJobFunc) (*wfv1.SuiteRun, error) {
	return s.updateSuiteRun(ctx, id, func(tx pgx.Tx, sr *wfv1.SuiteRun) (bool, error) {
		if sr.Status != wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED {
			if sr.CancelRequested {
				return false, nil
			}
			if _, err := tx.Exec(ctx, `UPDATE suite_runs SET cancel_requested = true WHERE id = $1`, id); err != nil {
				return false, fmt.Errorf("request cancel of suite run %s: %w", id, err)
			}
			return true, nil
		}
		var jobID *int64
		if err := tx.QueryRow(ctx, `UPDATE suite_runs SET cancel_requested = true WHERE id = $1 RETURNING job_id`,
			id).Scan(&jobID); err != nil {
			return false, fmt.Errorf("request cancel of suite run %s: %w", id, err)
		}
		if jobID != nil {
			if err := cancelJob(ctx, tx, *jobID); err != nil {
				return false, fmt.Errorf("cancel job of suite run %s: %w", id, err)
			}
		}
		return true, finishSuiteRunLocked(ctx, tx, sr, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, "",
			"not run: the suite run was cancelled first")
	})
}

// ReapLostSuiteRuns ends ERROR the unfinished suite runs whose River job is
// gone or finalized (discarded after its last failed execution, cancelled,
// or completed without finishing the suite run), so that no suite run
// stays QUEUED or RUNNING with nothing to execute it. It returns their
// IDs. Their tests still pending or running become SKIPPED; runs the
// suite run had started go on to their own end.
func (s *Store) ReapLostSuiteRuns(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT sr.id::text FROM suite_runs sr
		LEFT JOIN river_job j ON j.id = sr.job_id
		WHERE sr.status IN ('queued', 'running') AND sr.job_id IS NOT NULL
		  AND (j.id IS NULL OR j.state IN ('discarded', 'cancelled', 'completed'))`)
	if err != nil {
		return nil, fmt.Errorf("find lost suite runs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find lost suite runs: %w", err)
	}
	var reaped []string
	for _, id := range ids {
		sr, err := s.FinishSuiteRun(ctx, id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR,
			"the suite run's job was lost (its executions kept failing, or it was removed) before the suite run ended")
		if err != nil && !errors.Is(err, fault.ErrNotFound) {
			return reaped, err
		}
		if err == nil && sr.Status == wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR {
			reaped = append(reaped, id)
		}
	}
	return reaped, nil
}
