-- The tool catalog (ToolService): a tenant's named tools that runs
-- reference by name. A webhook tool's header values are sealed with the
-- server's keyring (bound to tenant and name); the definition column holds
-- the ToolDefinition as protojson with those values redacted. An MCP tool
-- remembers its server, so importing the server again replaces its tools,
-- and the credential sent as the server's bearer.

-- +goose Up
CREATE TABLE tools (
    tenant_id      text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name           text NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('webhook', 'mcp')),
    definition     jsonb NOT NULL,
    sealed_headers bytea,
    mcp_server_url text,
    mcp_credential text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name),
    CHECK ((kind = 'mcp') = (mcp_server_url IS NOT NULL))
);
CREATE INDEX tools_mcp_server ON tools (tenant_id, mcp_server_url) WHERE mcp_server_url IS NOT NULL;

-- +goose Down
DROP TABLE tools;
