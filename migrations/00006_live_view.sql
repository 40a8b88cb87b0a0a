-- Live view and takeover (LiveService).
--
-- A worker registers the run it executes in live_sessions for as long as
-- it holds the run's browser. Takeovers are asked for by the API on any
-- replica and carried out by that worker; the input a person sends travels
-- through live_inputs, and the newest screencast frame through live_frames
-- for viewers on other replicas than the worker's. Every change wakes the
-- worker and the viewers with NOTIFY wayfinder_run_events 'live:<run ID>'
-- (a hint: readers read the tables).

-- +goose Up
CREATE TABLE live_sessions (
    run_id        uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    -- The worker process that holds the run's browser.
    worker        text NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT now(),
    -- Viewers on other replicas keep this in the future while they watch;
    -- the worker copies frames to live_frames only while it is.
    watched_until timestamptz NOT NULL DEFAULT '-infinity'
);

CREATE TABLE takeovers (
    id           uuid PRIMARY KEY,
    run_id       uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    state        text NOT NULL CHECK (state IN ('requested', 'active', 'ended')),
    requested_by text NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    -- Set by HandBack; the worker then ends the takeover.
    handback_at  timestamptz,
    ended_at     timestamptz,
    end_reason   text NOT NULL DEFAULT '',
    note         text NOT NULL DEFAULT '',
    step_number  integer NOT NULL DEFAULT 0
);

CREATE INDEX takeovers_run_idx ON takeovers (run_id, requested_at);
-- At most one takeover per run is REQUESTED or ACTIVE.
CREATE UNIQUE INDEX takeovers_open_idx ON takeovers (run_id) WHERE state <> 'ended';

-- Unlogged: input and pictures are worth nothing after a database crash.
CREATE UNLOGGED TABLE live_inputs (
    seq         bigserial PRIMARY KEY,
    run_id      uuid NOT NULL,
    takeover_id uuid NOT NULL,
    -- The LiveInput as protojson.
    event       jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX live_inputs_run_idx ON live_inputs (run_id, seq);

CREATE UNLOGGED TABLE live_frames (
    run_id      uuid PRIMARY KEY,
    sequence    bigint NOT NULL,
    captured_at timestamptz NOT NULL,
    width       integer NOT NULL,
    height      integer NOT NULL,
    url         text NOT NULL DEFAULT '',
    data        bytea NOT NULL
);

-- +goose Down
DROP TABLE live_frames;
DROP TABLE live_inputs;
DROP TABLE takeovers;
DROP TABLE live_sessions;
