-- Token usage and cost per run, the outcome's account, and media lookup by
-- content so a screenshot shown to several model calls is stored once.

-- +goose Up
ALTER TABLE runs
    ADD COLUMN input_tokens        bigint NOT NULL DEFAULT 0,
    ADD COLUMN output_tokens       bigint NOT NULL DEFAULT 0,
    ADD COLUMN cached_input_tokens bigint NOT NULL DEFAULT 0,
    ADD COLUMN cost_usd            numeric(14, 6) NOT NULL DEFAULT 0,
    ADD COLUMN model_calls         integer NOT NULL DEFAULT 0,
    ADD COLUMN summary             text;

ALTER TABLE prompt_runs
    ADD COLUMN cached_input_tokens integer NOT NULL DEFAULT 0;

CREATE INDEX media_run_sha_idx ON media (run_id, sha256);

-- +goose Down
DROP INDEX media_run_sha_idx;
ALTER TABLE prompt_runs DROP COLUMN cached_input_tokens;
ALTER TABLE runs
    DROP COLUMN input_tokens,
    DROP COLUMN output_tokens,
    DROP COLUMN cached_input_tokens,
    DROP COLUMN cost_usd,
    DROP COLUMN model_calls,
    DROP COLUMN summary;
