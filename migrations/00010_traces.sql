-- Replayable traces of completed runs (issue 8, record and replay). A
-- trace is the run's successful actions, each with the page it expected
-- and a fingerprint of its target (internal/trace), and what the judge saw
-- at the end. Secrets are placeholders or [redacted], never values. key
-- identifies the task (a hash of the goal, the start URL and the params
-- that change behaviour): replay picks the pinned, else the newest trace
-- of a key. version counts the traces of a key; healed_from names the run
-- whose trace a healed replay started from.

-- +goose Up
CREATE TABLE run_traces (
    run_id      uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key         text NOT NULL,
    version     integer NOT NULL CHECK (version > 0),
    pinned      boolean NOT NULL DEFAULT false,
    healed_from uuid,
    -- []trace.Action and trace.Final as JSON.
    actions     jsonb NOT NULL,
    final       jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX run_traces_key ON run_traces (tenant_id, key, created_at DESC);
CREATE INDEX run_traces_tenant ON run_traces (tenant_id, created_at DESC, run_id DESC);

-- +goose Down
DROP TABLE run_traces;
