-- Human approvals, completion indicator results and webhook deliveries.

-- +goose Up
CREATE TABLE approvals (
    id           uuid PRIMARY KEY,
    run_id       uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    -- The ApprovalRequest as protojson.
    request      jsonb NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now(),
    answered_at  timestamptz,
    approved     boolean,
    message      text,
    answered_by  text
);

CREATE INDEX approvals_run_idx ON approvals (run_id, requested_at);
-- At most one open approval per run.
CREATE UNIQUE INDEX approvals_open_idx ON approvals (run_id) WHERE answered_at IS NULL;

-- The completion indicators' last results (IndicatorResult list as protojson).
ALTER TABLE runs ADD COLUMN criteria jsonb;

CREATE TABLE webhook_deliveries (
    id           uuid PRIMARY KEY,
    run_id       uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    event        text NOT NULL,
    url          text NOT NULL,
    -- The exact body sent (the signature covers it).
    body         bytea NOT NULL,
    state        text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    last_status  integer NOT NULL DEFAULT 0,
    last_error   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz
);

CREATE INDEX webhook_deliveries_run_idx ON webhook_deliveries (run_id, created_at DESC);

-- +goose Down
DROP TABLE webhook_deliveries;
ALTER TABLE runs DROP COLUMN criteria;
DROP TABLE approvals;
