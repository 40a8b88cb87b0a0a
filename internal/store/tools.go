package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/secrets"
)

// The tool catalog (ToolService). Definitions are stored as protojson with
// webhook header values replaced by redactedValue; the values themselves
// are sealed apart and only OpenTool returns them.

// redactedValue stands for a sealed header value in stored and returned
// definitions.
const redactedValue = "[redacted]"

// toolAAD binds sealed header values to their tenant and tool.
func toolAAD(tenant, name string) []byte {
	return []byte("tool:" + tenant + ":" + name)
}

const toolColumns = `name, kind, definition, sealed_headers, mcp_credential, created_at`

// CreateTool stores a webhook tool (validated by the caller) under
// def.Name, its header values sealed with kr's primary key. A taken name
// wraps fault.ErrAlreadyExists, an unknown tenant fault.ErrNotFound;
// header values without a keyring wrap fault.ErrFailedPrecondition.
func (s *Store) CreateTool(ctx context.Context, kr *secrets.Keyring, tenant string, def *wfv1.ToolDefinition) (*wfv1.CatalogTool, error) {
	if def.GetWebhook() == nil {
		return nil, fmt.Errorf("tool %q: only webhook tools are created directly: %w", def.GetName(), fault.ErrInvalidArgument)
	}
	stored := proto.Clone(def).(*wfv1.ToolDefinition)
	var sealed []byte
	if h := stored.GetWebhook().GetHeaders(); len(h) > 0 {
		if kr == nil {
			return nil, fmt.Errorf("%w: webhook headers are sealed at rest and the server has no encryption key", fault.ErrFailedPrecondition)
		}
		raw, err := json.Marshal(h)
		if err != nil {
			return nil, fmt.Errorf("encode tool headers: %w", err)
		}
		sealed = kr.Seal(raw, toolAAD(tenant, stored.Name))
		for k := range h {
			h[k] = redactedValue
		}
	}
	raw, err := protojson.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("encode tool: %w", err)
	}
	row := s.pool.QueryRow(ctx, `
		INSERT INTO tools (tenant_id, name, kind, definition, sealed_headers) VALUES ($1, $2, 'webhook', $3, $4)
		RETURNING `+toolColumns, tenant, stored.Name, raw, sealed)
	t, err := scanTool(row)
	if err != nil {
		return nil, toolWriteError(tenant, stored.Name, err)
	}
	return t, nil
}

// ReplaceMcpTools stores defs (MCP tools of serverURL, validated by the
// caller) in place of the tools the tenant imported from serverURL before,
// in one transaction. credential names the stored credential sent as the
// server's bearer ("" for none). A name taken by another tool wraps
// fault.ErrAlreadyExists.
func (s *Store) ReplaceMcpTools(ctx context.Context, tenant, serverURL, credential string, defs []*wfv1.ToolDefinition) ([]*wfv1.CatalogTool, error) {
	var out []*wfv1.CatalogTool
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		out = nil
		if _, err := tx.Exec(ctx, `DELETE FROM tools WHERE tenant_id = $1 AND mcp_server_url = $2`, tenant, serverURL); err != nil {
			return fmt.Errorf("delete the tools of the MCP server: %w", err)
		}
		for _, d := range defs {
			if d.GetMcp().GetServerUrl() != serverURL {
				return fmt.Errorf("tool %q is not a tool of the server imported: %w", d.GetName(), fault.ErrInvalidArgument)
			}
			raw, err := protojson.Marshal(d)
			if err != nil {
				return fmt.Errorf("encode tool: %w", err)
			}
			t, err := scanTool(tx.QueryRow(ctx, `
				INSERT INTO tools (tenant_id, name, kind, definition, mcp_server_url, mcp_credential)
				VALUES ($1, $2, 'mcp', $3, $4, $5) RETURNING `+toolColumns, tenant, d.GetName(), raw, serverURL, credential))
			if err != nil {
				return toolWriteError(tenant, d.GetName(), err)
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// toolWriteError classifies a failed insert.
func toolWriteError(tenant, name string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return fmt.Errorf("tool %q: %w", name, fault.ErrAlreadyExists)
		case "23503":
			return fmt.Errorf("tenant %q: %w", tenant, errNotFound)
		}
	}
	return fmt.Errorf("store tool %q: %w", name, err)
}

// GetTool returns one of the tenant's tools, header values redacted, or an
// error wrapping fault.ErrNotFound.
func (s *Store) GetTool(ctx context.Context, tenant, name string) (*wfv1.CatalogTool, error) {
	t, err := scanTool(s.pool.QueryRow(ctx, `SELECT `+toolColumns+` FROM tools WHERE tenant_id = $1 AND name = $2`, tenant, name))
	if err != nil {
		return nil, notFound("tool", name, err)
	}
	return t, nil
}

// OpenTool returns one of the tenant's tools with its webhook header values
// unsealed, for a run. A missing tool wraps fault.ErrNotFound.
func (s *Store) OpenTool(ctx context.Context, kr *secrets.Keyring, tenant, name string) (*wfv1.CatalogTool, error) {
	var sealed []byte
	t, err := scanToolSealed(s.pool.QueryRow(ctx, `SELECT `+toolColumns+` FROM tools WHERE tenant_id = $1 AND name = $2`, tenant, name), &sealed)
	if err != nil {
		return nil, notFound("tool", name, err)
	}
	if len(sealed) == 0 {
		return t, nil
	}
	if kr == nil {
		return nil, fmt.Errorf("tool %q: its headers cannot be opened: the server has no encryption key", name)
	}
	raw, err := kr.Open(sealed, toolAAD(tenant, name))
	if err != nil {
		return nil, fmt.Errorf("open the headers of tool %q: %w", name, err)
	}
	var h map[string]string
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("decode the headers of tool %q: %w", name, err)
	}
	t.Definition.GetWebhook().Headers = h
	return t, nil
}

// ListTools returns the tenant's tools ordered by name, header values
// redacted.
func (s *Store) ListTools(ctx context.Context, tenant string) ([]*wfv1.CatalogTool, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+toolColumns+` FROM tools WHERE tenant_id = $1 ORDER BY name`, tenant)
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	defer rows.Close()
	var out []*wfv1.CatalogTool
	for rows.Next() {
		t, err := scanTool(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	return out, nil
}

// DeleteTool deletes one of the tenant's tools; none is an error wrapping
// fault.ErrNotFound.
func (s *Store) DeleteTool(ctx context.Context, tenant, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM tools WHERE tenant_id = $1 AND name = $2`, tenant, name)
	if err != nil {
		return fmt.Errorf("delete tool %q: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("tool %q: %w", name, errNotFound)
	}
	return nil
}

// McpServerCredential returns the credential the tenant imported an MCP
// server with, "" when it imported none from serverURL or without one.
func (s *Store) McpServerCredential(ctx context.Context, tenant, serverURL string) (string, error) {
	var cred string
	err := s.pool.QueryRow(ctx, `
		SELECT mcp_credential FROM tools WHERE tenant_id = $1 AND mcp_server_url = $2 AND mcp_credential <> '' LIMIT 1`,
		tenant, serverURL).Scan(&cred)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("load the credential of an MCP server: %w", err)
	}
	return cred, nil
}

func scanTool(row pgx.Row) (*wfv1.CatalogTool, error) {
	var sealed []byte
	return scanToolSealed(row, &sealed)
}

func scanToolSealed(row pgx.Row, sealed *[]byte) (*wfv1.CatalogTool, error) {
	var (
		name, kind, cred string
		raw              []byte
		at               time.Time
	)
	if err := row.Scan(&name, &kind, &raw, sealed, &cred, &at); err != nil {
		return nil, err
	}
	def := &wfv1.ToolDefinition{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, def); err != nil {
		return nil, fmt.Errorf("decode tool %q: %w", name, err)
	}
	t := &wfv1.CatalogTool{Definition: def, McpCredential: cred, CreateTime: timestamppb.New(at)}
	switch kind {
	case "webhook":
		t.Kind = wfv1.CatalogToolKind_CATALOG_TOOL_KIND_WEBHOOK
	case "mcp":
		t.Kind = wfv1.CatalogToolKind_CATALOG_TOOL_KIND_MCP
	}
	return t, nil
}
