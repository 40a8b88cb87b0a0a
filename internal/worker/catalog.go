package worker

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/store"
)

// resolveTools replaces the run's tools that name the tool catalog
// (catalog_ref) by their stored definitions, before the run's engine
// parameters are built: a webhook tool with its header values unsealed, or
// an MCP tool. A reference's own name, when set, is the name the model
// sees. A tool deleted since CreateRun ends the run.
func (w *Worker) resolveTools(ctx context.Context, run *wfv1.Run) error {
	for i, t := range run.GetParams().GetTools() {
		ref := t.GetCatalogRef()
		if ref == "" {
			continue
		}
		stored, err := w.cfg.Store.OpenTool(ctx, w.cfg.Keyring, run.GetTenantId(), ref)
		if err != nil {
			return fmt.Errorf("catalog tool %q: %w", ref, err)
		}
		d := proto.Clone(stored.GetDefinition()).(*wfv1.ToolDefinition)
		if t.GetName() != "" {
			d.Name = t.GetName()
		}
		run.Params.Tools[i] = d
	}
	return nil
}

// mcpAuth returns the bearer tokens of the run's MCP servers: the value of
// the credential the tenant imported the server with, each use audited; ""
// for a server imported without one, or never imported.
func (w *Worker) mcpAuth(run *wfv1.Run) func(ctx context.Context, serverURL string) (string, error) {
	return func(ctx context.Context, serverURL string) (string, error) {
		name, err := w.cfg.Store.McpServerCredential(ctx, run.GetTenantId(), serverURL)
		if err != nil || name == "" {
			return "", err
		}
		if w.cfg.Keyring == nil {
			return "", errors.New("stored credentials cannot be opened: the server has no encryption key")
		}
		c, err := w.cfg.Store.OpenCredential(ctx, w.cfg.Keyring, run.GetTenantId(), name)
		if err != nil {
			return "", fmt.Errorf("MCP server credential %q: %w", name, err)
		}
		token := McpToken(c.Values)
		if token == "" {
			return "", fmt.Errorf("MCP server credential %q has no api_key or token field", name)
		}
		if err := w.cfg.Store.RecordAudit(ctx, store.Audit{Tenant: run.GetTenantId(), Kind: store.AuditCredentialUsed,
			Actor: "run:" + run.GetId(), Subject: name, RunID: run.GetId(),
			Details: map[string]any{"use": "mcp_server", "version": c.Version}}); err != nil {
			w.cfg.Logger.WarnContext(ctx, "recording audit event", "error", err)
		}
		return token, nil
	}
}

// McpToken is the bearer a credential's values give an MCP server: its
// api_key field, else its token field; "" when it has neither.
func McpToken(values map[string]string) string {
	if v := values["api_key"]; v != "" {
		return v
	}
	return values["token"]
}
