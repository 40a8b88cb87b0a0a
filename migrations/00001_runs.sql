-- The run record and everything a run leaves behind: steps, prompt runs,
-- media (screenshots) and the ordered event log.

-- +goose Up
CREATE TABLE runs (
    id                        uuid PRIMARY KEY,
    -- Idempotency key from CreateRun; unique when present.
    request_id                text UNIQUE,
    status                    text NOT NULL CHECK (status IN (
                                  'queued', 'running', 'awaiting_approval', 'completed',
                                  'failed', 'max_steps_reached', 'error', 'cancelled')),
    -- RunParams as protojson (secrets are redacted before they get here).
    params                    jsonb NOT NULL,
    labels                    jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at                timestamptz NOT NULL DEFAULT now(),
    started_at                timestamptz,
    ended_at                  timestamptz,
    step_count                integer NOT NULL DEFAULT 0,
    error_category            text,
    error_message             text,
    error_step                integer,
    final_screenshot_media_id uuid,
    final_url                 text,
    final_verdict             jsonb,
    cancel_requested          boolean NOT NULL DEFAULT false,
    cancel_reason             text,
    attempts                  integer NOT NULL DEFAULT 0,
    -- The River job executing the run.
    job_id                    bigint,
    last_event_seq            bigint NOT NULL DEFAULT 0,
    -- W3C trace context of the creating request, so the run's spans join
    -- the caller's trace across the queue.
    trace_context             jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX runs_created_idx ON runs (created_at DESC, id DESC);
CREATE INDEX runs_status_created_idx ON runs (status, created_at DESC, id DESC);
CREATE INDEX runs_labels_idx ON runs USING gin (labels jsonb_path_ops);
CREATE INDEX runs_live_job_idx ON runs (job_id) WHERE status IN ('queued', 'running', 'awaiting_approval');

CREATE TABLE media (
    id           uuid PRIMARY KEY,
    run_id       uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_number  integer,
    content_type text NOT NULL,
    size_bytes   integer NOT NULL,
    sha256       bytea NOT NULL,
    data         bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX media_run_idx ON media (run_id);

CREATE TABLE steps (
    run_id              uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    number              integer NOT NULL CHECK (number > 0),
    started_at          timestamptz NOT NULL,
    ended_at            timestamptz NOT NULL,
    url                 text NOT NULL DEFAULT '',
    title               text NOT NULL DEFAULT '',
    screenshot_media_id uuid REFERENCES media (id) ON DELETE SET NULL,
    -- The full Step as protojson (actions, reasoning, verdict, error).
    record              jsonb NOT NULL,
    PRIMARY KEY (run_id, number)
);

-- One model call: the prompt sent, the answer, tokens and cost.
CREATE TABLE prompt_runs (
    id             uuid PRIMARY KEY,
    run_id         uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_number    integer,
    role           text NOT NULL CHECK (role IN ('controller', 'judge', 'oracle')),
    provider       text NOT NULL,
    model          text NOT NULL,
    prompt_ref     text NOT NULL DEFAULT '',
    prompt_version integer,
    request        jsonb NOT NULL,
    response       jsonb,
    input_tokens   integer NOT NULL DEFAULT 0,
    output_tokens  integer NOT NULL DEFAULT 0,
    cost_usd       numeric(12, 6) NOT NULL DEFAULT 0,
    started_at     timestamptz NOT NULL,
    ended_at       timestamptz,
    error          text
);

CREATE INDEX prompt_runs_run_idx ON prompt_runs (run_id, started_at);

-- The screenshots (and other media) a prompt run showed the model.
CREATE TABLE prompt_run_media (
    prompt_run_id uuid NOT NULL REFERENCES prompt_runs (id) ON DELETE CASCADE,
    media_id      uuid NOT NULL REFERENCES media (id) ON DELETE CASCADE,
    position      integer NOT NULL,
    PRIMARY KEY (prompt_run_id, position)
);

CREATE TABLE run_events (
    run_id     uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    type       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- The full RunEvent as protojson.
    event      jsonb NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- +goose Down
DROP TABLE run_events;
DROP TABLE prompt_run_media;
DROP TABLE prompt_runs;
DROP TABLE steps;
DROP TABLE media;
DROP TABLE runs;
