package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/secrets"
)

func objectSchema(t *testing.T) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(map[string]any{"type": "object"})
	require.NoError(t, err)
	return s
}

// TestToolCatalog: webhook tools keep their header values sealed (redacted
// everywhere but OpenTool), names are unique per tenant, another tenant
// sees nothing, and importing an MCP server again replaces its tools.
func TestToolCatalog(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	kr, err := secrets.Parse("k1:" + hex32('b'))
	require.NoError(t, err)
	for _, id := range []string{"acme", "other"} {
		_, err := s.CreateTenant(ctx, &wfv1.Tenant{Id: id})
		require.NoError(t, err)
	}

	wh := &wfv1.ToolDefinition{Name: "lookup", Description: "Look up", InputSchema: objectSchema(t),
		Implementation: &wfv1.ToolDefinition_Webhook{Webhook: &wfv1.WebhookTool{
			Url: "https://hooks.example.com/lookup", Headers: map[string]string{"Authorization": "Bearer s3cret-token"}}}}
	created, err := s.CreateTool(ctx, kr, "acme", wh)
	require.NoError(t, err)
	require.Equal(t, wfv1.CatalogToolKind_CATALOG_TOOL_KIND_WEBHOOK, created.Kind)
	require.Equal(t, "[redacted]", created.Definition.GetWebhook().Headers["Authorization"])
	require.Equal(t, "Bearer s3cret-token", wh.GetWebhook().Headers["Authorization"], "the caller's definition is not changed")

	_, err = s.CreateTool(ctx, kr, "acme", wh)
	require.ErrorIs(t, err, fault.ErrAlreadyExists)
	_, err = s.CreateTool(ctx, nil, "acme", &wfv1.ToolDefinition{Name: "x", InputSchema: objectSchema(t),
		Implementation: &wfv1.ToolDefinition_Webhook{Webhook: &wfv1.WebhookTool{Url: "https://a.example", Headers: map[string]string{"X": "y"}}}})
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)

	got, err := s.GetTool(ctx, "acme", "lookup")
	require.NoError(t, err)
	require.Equal(t, "[redacted]", got.Definition.GetWebhook().Headers["Authorization"])
	opened, err := s.OpenTool(ctx, kr, "acme", "lookup")
	require.NoError(t, err)
	require.Equal(t, "Bearer s3cret-token", opened.Definition.GetWebhook().Headers["Authorization"])

	_, err = s.GetTool(ctx, "other", "lookup")
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = s.OpenTool(ctx, kr, "other", "lookup")
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.ErrorIs(t, s.DeleteTool(ctx, "other", "lookup"), fault.ErrNotFound)

	mcpTool := func(name, remote, server string) *wfv1.ToolDefinition {
		return &wfv1.ToolDefinition{Name: name, InputSchema: objectSchema(t),
			Implementation: &wfv1.ToolDefinition_Mcp{Mcp: &wfv1.McpTool{ServerUrl: server, ToolName: remote}}}
	}
	const server = "https://mcp.example.com/mcp"
	imported, err := s.ReplaceMcpTools(ctx, "acme", server, "mcp-key", []*wfv1.ToolDefinition{
		mcpTool("crm_a", "a", server), mcpTool("crm_b", "b", server)})
	require.NoError(t, err)
	require.Len(t, imported, 2)
	require.Equal(t, "mcp-key", imported[0].McpCredential)
	cred, err := s.McpServerCredential(ctx, "acme", server)
	require.NoError(t, err)
	require.Equal(t, "mcp-key", cred)
	cred, err = s.McpServerCredential(ctx, "other", server)
	require.NoError(t, err)
	require.Empty(t, cred)

	// A name another tool holds fails the import and keeps the old tools.
	_, err = s.ReplaceMcpTools(ctx, "acme", server, "", []*wfv1.ToolDefinition{mcpTool("lookup", "c", server)})
	require.ErrorIs(t, err, fault.ErrAlreadyExists)
	list, err := s.ListTools(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []string{"crm_a", "crm_b", "lookup"}, toolNames(list))

	// Re-import replaces the server's tools.
	_, err = s.ReplaceMcpTools(ctx, "acme", server, "", []*wfv1.ToolDefinition{mcpTool("crm_c", "c", server)})
	require.NoError(t, err)
	list, err = s.ListTools(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []string{"crm_c", "lookup"}, toolNames(list))
	require.Equal(t, wfv1.CatalogToolKind_CATALOG_TOOL_KIND_MCP, list[0].Kind)
	require.Equal(t, "c", list[0].Definition.GetMcp().GetToolName())
	cred, err = s.McpServerCredential(ctx, "acme", server)
	require.NoError(t, err)
	require.Empty(t, cred)

	other, err := s.ListTools(ctx, "other")
	require.NoError(t, err)
	require.Empty(t, other)

	require.NoError(t, s.DeleteTool(ctx, "acme", "lookup"))
	require.ErrorIs(t, s.DeleteTool(ctx, "acme", "lookup"), fault.ErrNotFound)
	_, err = s.CreateTool(ctx, kr, "nobody", &wfv1.ToolDefinition{Name: "x", InputSchema: objectSchema(t),
		Implementation: &wfv1.ToolDefinition_Webhook{Webhook: &wfv1.WebhookTool{Url: "https://a.example"}}})
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func toolNames(ts []*wfv1.CatalogTool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Definition.GetName()
	}
	return out
}
