-- Tests and suites (TestService). A test is a run's parameters plus its
-- oracles, kept as the Test protojson (tests hold credential references,
-- never secrets: the API refuses inline ones). A suite lists tests by name,
-- in order. A suite run snapshots its suite and tests when created, so
-- later edits do not change it, and keeps one result row per test, written
-- as the test's attempts progress.
--
-- runs.output is the structured data a run produced (Run.output), checked
-- by data_schema oracles.

-- +goose Up
CREATE TABLE tests (
    tenant_id  text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name       text NOT NULL,
    -- Test as protojson, without name and timestamps.
    spec       jsonb NOT NULL,
    -- Copied from spec for ListTests' tag filter.
    tags       text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name)
);
CREATE INDEX tests_tags ON tests USING gin (tags);

CREATE TABLE suites (
    tenant_id      text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name           text NOT NULL,
    -- Suite as protojson, without name and timestamps.
    spec           jsonb NOT NULL,
    -- The suite's test names, in order (for the delete check on tests).
    test_names     text[] NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name)
);
CREATE INDEX suites_test_names ON suites USING gin (test_names);

CREATE TABLE suite_runs (
    id               uuid PRIMARY KEY,
    tenant_id        text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    suite_name       text NOT NULL,
    request_id       text,
    status           text NOT NULL CHECK (status IN ('queued', 'running', 'passed', 'failed', 'cancelled', 'error')),
    -- The tag filter it was started with.
    tags             text[] NOT NULL DEFAULT '{}',
    -- The Suite and the Tests it runs, as protojson, when it was created:
    -- {"suite": {...}, "tests": [{...}, ...]}.
    snapshot         jsonb NOT NULL,
    cancel_requested boolean NOT NULL DEFAULT false,
    error_message    text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    ended_at         timestamptz,
    -- The River job executing it.
    job_id           bigint
);
CREATE UNIQUE INDEX suite_runs_request ON suite_runs (tenant_id, request_id) WHERE request_id IS NOT NULL;
CREATE INDEX suite_runs_history ON suite_runs (tenant_id, suite_name, created_at DESC, id DESC);
CREATE INDEX suite_runs_tenant ON suite_runs (tenant_id, created_at DESC, id DESC);
-- The reaper's scan of unfinished suite runs.
CREATE INDEX suite_runs_live ON suite_runs (job_id) WHERE status IN ('queued', 'running');

CREATE TABLE suite_test_results (
    suite_run_id uuid NOT NULL REFERENCES suite_runs (id) ON DELETE CASCADE,
    -- The test's index in the suite run's snapshot.
    position     integer NOT NULL,
    test_name    text NOT NULL,
    outcome      text NOT NULL CHECK (outcome IN ('pending', 'running', 'passed', 'failed', 'flaky', 'error', 'skipped')),
    -- TestResult as protojson.
    result       jsonb NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (suite_run_id, position)
);

ALTER TABLE runs ADD COLUMN output jsonb;

-- +goose Down
ALTER TABLE runs DROP COLUMN output;
DROP TABLE suite_test_results;
DROP TABLE suite_runs;
DROP TABLE suites;
DROP TABLE tests;
