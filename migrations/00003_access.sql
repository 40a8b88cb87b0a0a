-- Tenants and their API keys, encrypted credentials, the audit log, site
-- profiles, persistent browser profiles, and the tenant and sealed secrets
-- of every run.

-- +goose Up
CREATE TABLE tenants (
    id                  text PRIMARY KEY,
    display_name        text NOT NULL DEFAULT '',
    max_concurrent_runs integer NOT NULL DEFAULT 0 CHECK (max_concurrent_runs >= 0),
    created_at          timestamptz NOT NULL DEFAULT now()
);

INSERT INTO tenants (id, display_name) VALUES ('default', 'Default tenant');

CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    tenant_id    text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         text NOT NULL DEFAULT '',
    -- The key's first characters, for people to recognise it.
    prefix       text NOT NULL,
    -- SHA-256 of the whole key; the key itself is never stored.
    hash         bytea NOT NULL UNIQUE,
    admin        boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at);

CREATE TABLE credentials (
    tenant_id    text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         text NOT NULL,
    type         text NOT NULL,
    fields       text[] NOT NULL,
    description  text NOT NULL DEFAULT '',
    version      integer NOT NULL DEFAULT 1,
    -- ID of the key that sealed the values (also inside the sealed bytes).
    key_id       text NOT NULL,
    -- The values as JSON, sealed with AES-256-GCM.
    sealed       bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    PRIMARY KEY (tenant_id, name)
);

CREATE TABLE audit_events (
    id         bigserial PRIMARY KEY,
    tenant_id  text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    kind       text NOT NULL,
    actor      text NOT NULL,
    subject    text NOT NULL DEFAULT '',
    run_id     uuid,
    details    jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX audit_events_tenant_idx ON audit_events (tenant_id, id DESC);

CREATE TABLE site_profiles (
    tenant_id  text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    domain     text NOT NULL,
    -- The SiteProfile as protojson.
    profile    jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, domain)
);

-- Cookies and localStorage a run saved under a profile name, sealed.
CREATE TABLE browser_profiles (
    tenant_id  text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name       text NOT NULL,
    key_id     text NOT NULL,
    sealed     bytea NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name)
);

ALTER TABLE runs ADD COLUMN tenant_id text NOT NULL DEFAULT 'default' REFERENCES tenants (id);
-- The params as given (with their secrets), sealed; params holds them
-- redacted.
ALTER TABLE runs ADD COLUMN sealed_params bytea;
-- Idempotency keys are per tenant: one tenant's key never finds another's run.
ALTER TABLE runs DROP CONSTRAINT runs_request_id_key;
CREATE UNIQUE INDEX runs_tenant_request_idx ON runs (tenant_id, request_id);
CREATE INDEX runs_tenant_created_idx ON runs (tenant_id, created_at DESC, id DESC);

-- +goose Down
DROP INDEX runs_tenant_created_idx;
DROP INDEX runs_tenant_request_idx;
ALTER TABLE runs ADD CONSTRAINT runs_request_id_key UNIQUE (request_id);
ALTER TABLE runs DROP COLUMN sealed_params;
ALTER TABLE runs DROP COLUMN tenant_id;
DROP TABLE browser_profiles;
DROP TABLE site_profiles;
DROP TABLE audit_events;
DROP TABLE credentials;
DROP TABLE api_keys;
DROP TABLE tenants;
