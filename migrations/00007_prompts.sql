-- The prompt library (PromptService): named, versioned prompts of a
-- tenant. A version is never changed once written; a new one gets the next
-- number. Every model call records the version it used
-- (prompt_runs.prompt_ref), and a run pins the versions its references
-- resolved to when it first started (runs.prompt_pins), so a resumed run
-- uses the same ones.

-- +goose Up
CREATE TABLE prompts (
    tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        text NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    role        text NOT NULL CHECK (role IN ('controller', 'judge')),
    template    text NOT NULL,
    description text NOT NULL DEFAULT '',
    -- ModelSettings as protojson (no prompt fields).
    defaults    jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    created_by  text NOT NULL DEFAULT '',
    PRIMARY KEY (tenant_id, name, version)
);

-- prompt_runs.prompt_ref ("name@version", '' for the default prompt or
-- inline prompt_text) exists since 00001.

-- The run's resolved references by role ("controller", "judge"), set once
-- when the run first starts.
ALTER TABLE runs ADD COLUMN prompt_pins jsonb NOT NULL DEFAULT '{}'::jsonb;

-- +goose Down
ALTER TABLE runs DROP COLUMN prompt_pins;
DROP TABLE prompts;
