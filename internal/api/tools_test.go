package api

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/tools/mcptest"
	"github.com/wayfinder/wayfinder/internal/worker"
)

const toolSecret = "Bearer hook-secret-7c6b5a49"

type toolBundle struct {
	svc         *ToolService
	st          *store.Store
	acme, other context.Context
}

func newToolService(t *testing.T) toolBundle {
	t.Helper()
	st := store.New(storetest.NewPool(t))
	kr, err := secrets.Parse("k1:" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	require.NoError(t, err)
	for _, id := range []string{"acme", "other"} {
		_, err := st.CreateTenant(t.Context(), &wfv1.Tenant{Id: id})
		require.NoError(t, err)
	}
	return toolBundle{svc: NewToolService(st, kr, worker.Egress(true)), st: st, acme: asTenant("acme"), other: asTenant("other")}
}

func schemaStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}

func webhookTool(t *testing.T, name string) *wfv1.ToolDefinition {
	return &wfv1.ToolDefinition{Name: name, Description: "Look up a customer.",
		InputSchema: schemaStruct(t, map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}}),
		Implementation: &wfv1.ToolDefinition_Webhook{Webhook: &wfv1.WebhookTool{
			Url: "https://hooks.example.com/customer", Headers: map[string]string{"Authorization": toolSecret}}}}
}

func TestToolServiceCRUD(t *testing.T) {
	t.Parallel()
	b := newToolService(t)
	created, err := b.svc.CreateTool(b.acme, &wfv1.CreateToolRequest{Tool: webhookTool(t, "customer")})
	require.NoError(t, err)
	require.Equal(t, wfv1.CatalogToolKind_CATALOG_TOOL_KIND_WEBHOOK, created.Kind)
	require.Equal(t, Redacted, created.Definition.GetWebhook().Headers["Authorization"])

	_, err = b.svc.CreateTool(b.acme, &wfv1.CreateToolRequest{Tool: webhookTool(t, "customer")})
	require.ErrorIs(t, err, fault.ErrAlreadyExists)

	got, err := b.svc.GetTool(b.acme, &wfv1.GetToolRequest{Name: "customer"})
	require.NoError(t, err)
	require.Equal(t, "Look up a customer.", got.Definition.Description)
	require.NotContains(t, got.String(), toolSecret)
	list, err := b.svc.ListTools(b.acme, &wfv1.ListToolsRequest{})
	require.NoError(t, err)
	require.Len(t, list.Tools, 1)

	// Another tenant sees none of it.
	_, err = b.svc.GetTool(b.other, &wfv1.GetToolRequest{Name: "customer"})
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.svc.DeleteTool(b.other, &wfv1.DeleteToolRequest{Name: "customer"})
	require.ErrorIs(t, err, fault.ErrNotFound)
	list, err = b.svc.ListTools(b.other, &wfv1.ListToolsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Tools)

	_, err = b.svc.DeleteTool(b.acme, &wfv1.DeleteToolRequest{Name: "customer"})
	require.NoError(t, err)
	_, err = b.svc.GetTool(b.acme, &wfv1.GetToolRequest{Name: "customer"})
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestCreateToolValidation(t *testing.T) {
	t.Parallel()
	b := newToolService(t)
	tests := []struct {
		name  string
		edit  func(d *wfv1.ToolDefinition)
		field string
	}{
		{"no tool", nil, "tool"},
		{"bad name", func(d *wfv1.ToolDefinition) { d.Name = "has space" }, "tool.name"},
		{"built-in name", func(d *wfv1.ToolDefinition) { d.Name = "browser_click" }, "tool.name"},
		{"no schema", func(d *wfv1.ToolDefinition) { d.InputSchema = nil }, "tool.input_schema"},
		{"plain http", func(d *wfv1.ToolDefinition) { d.GetWebhook().Url = "http://hooks.example.com/x" }, "tool.webhook.url"},
		{"mcp", func(d *wfv1.ToolDefinition) {
			d.Implementation = &wfv1.ToolDefinition_Mcp{Mcp: &wfv1.McpTool{ServerUrl: "https://m.example.com", ToolName: "x"}}
		}, "tool.webhook"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &wfv1.CreateToolRequest{}
			if tc.edit != nil {
				req.Tool = webhookTool(t, "valid")
				tc.edit(req.Tool)
			}
			_, err := b.svc.CreateTool(b.acme, req)
			require.ErrorIs(t, err, fault.ErrInvalidArgument)
			require.Contains(t, err.Error(), tc.field)
			require.NotContains(t, err.Error(), toolSecret)
		})
	}
}

// TestImportMcpServer: a server's tools are imported with the prefix and
// their schemas through the credential's bearer; importing again replaces
// them; another tenant neither sees them nor can use the credential.
func TestImportMcpServer(t *testing.T) {
	t.Parallel()
	b := newToolService(t)
	const token = "mcp-token-0a1b2c3d4e"
	srv := mcptest.Start(t, token)
	_, err := b.st.CreateCredential(b.acme, b.svc.keyring, store.NewCredential{Tenant: "acme", Name: "crm-mcp",
		Type: wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, Values: map[string]string{"api_key": token}})
	require.NoError(t, err)

	resp, err := b.svc.ImportMcpServer(b.acme, &wfv1.ImportMcpServerRequest{ServerUrl: srv.URL, Credential: "crm-mcp", Prefix: "crm_"})
	require.NoError(t, err)
	require.Empty(t, resp.Skipped)
	names := map[string]*wfv1.CatalogTool{}
	for _, tl := range resp.Tools {
		names[tl.Definition.Name] = tl
	}
	require.Len(t, names, 3)
	order := names["crm_lookup_order"]
	require.NotNil(t, order)
	require.Equal(t, wfv1.CatalogToolKind_CATALOG_TOOL_KIND_MCP, order.Kind)
	require.Equal(t, "crm-mcp", order.McpCredential)
	require.Equal(t, "lookup_order", order.Definition.GetMcp().GetToolName())
	require.Equal(t, srv.URL, order.Definition.GetMcp().GetServerUrl())
	require.Contains(t, order.Definition.InputSchema.GetFields()["properties"].GetStructValue().GetFields(), "order_id")
	require.NotNil(t, order.Definition.OutputSchema)
	// Opening the credential is on record, without its value.
	audit, _, err := b.st.ListAudit(b.acme, store.AuditFilter{Tenant: "acme", Kind: store.AuditCredentialUsed, PageSize: 10})
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, "crm-mcp", audit[0].GetSubject())
	require.NotContains(t, audit[0].String(), token)

	// Re-import under another prefix replaces the server's tools.
	_, err = b.svc.ImportMcpServer(b.acme, &wfv1.ImportMcpServerRequest{ServerUrl: srv.URL, Credential: "crm-mcp", Prefix: "v2-"})
	require.NoError(t, err)
	list, err := b.svc.ListTools(b.acme, &wfv1.ListToolsRequest{})
	require.NoError(t, err)
	require.Len(t, list.Tools, 3)
	for _, tl := range list.Tools {
		require.Regexp(t, `^v2-`, tl.Definition.Name)
	}

	_, err = b.svc.GetTool(b.other, &wfv1.GetToolRequest{Name: "v2-echo"})
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.svc.ImportMcpServer(b.other, &wfv1.ImportMcpServerRequest{ServerUrl: srv.URL, Credential: "crm-mcp"})
	require.ErrorIs(t, err, fault.ErrInvalidArgument, "another tenant's credential does not exist for it")

	// Without the bearer the server refuses: UNAVAILABLE, no token shown.
	_, err = b.svc.ImportMcpServer(b.acme, &wfv1.ImportMcpServerRequest{ServerUrl: srv.URL})
	require.ErrorIs(t, err, fault.ErrUnavailable)
	require.NotContains(t, err.Error(), token)
}

func TestImportMcpServerRefusals(t *testing.T) {
	t.Parallel()
	b := newToolService(t)
	srv := mcptest.Start(t, "")
	tests := []struct {
		name string
		req  *wfv1.ImportMcpServerRequest
		kind error
	}{
		{"no url", &wfv1.ImportMcpServerRequest{}, fault.ErrInvalidArgument},
		{"plain http", &wfv1.ImportMcpServerRequest{ServerUrl: "http://mcp.example.com/mcp"}, fault.ErrInvalidArgument},
		{"bad prefix", &wfv1.ImportMcpServerRequest{ServerUrl: srv.URL, Prefix: "a b"}, fault.ErrInvalidArgument},
		{"unknown credential", &wfv1.ImportMcpServerRequest{ServerUrl: srv.URL, Credential: "nope"}, fault.ErrInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.svc.ImportMcpServer(b.acme, tc.req)
			require.ErrorIs(t, err, tc.kind)
		})
	}

	// The egress policy applies to imports: a loopback server is refused
	// when private networks are.
	guarded := NewToolService(b.st, b.svc.keyring, worker.Egress(false))
	_, err := guarded.ImportMcpServer(b.acme, &wfv1.ImportMcpServerRequest{ServerUrl: srv.URL})
	require.ErrorIs(t, err, fault.ErrUnavailable)
	require.Contains(t, err.Error(), "refused")
}

// TestRunCatalogTools: a run's catalog references and MCP tools are
// validated, take part in the duplicate-name check, and a reference to a
// tool the tenant does not have is refused at CreateRun.
func TestRunCatalogTools(t *testing.T) {
	t.Parallel()
	b := newToolService(t)
	_, err := b.svc.CreateTool(b.acme, &wfv1.CreateToolRequest{Tool: webhookTool(t, "customer")})
	require.NoError(t, err)
	obj := schemaStruct(t, map[string]any{"type": "object"})
	ref := func(name, catalog string) *wfv1.ToolDefinition {
		return &wfv1.ToolDefinition{Name: name, Implementation: &wfv1.ToolDefinition_CatalogRef{CatalogRef: catalog}}
	}
	mcpTool := func(name, remote string) *wfv1.ToolDefinition {
		return &wfv1.ToolDefinition{Name: name, InputSchema: obj,
			Implementation: &wfv1.ToolDefinition_Mcp{Mcp: &wfv1.McpTool{ServerUrl: "https://mcp.example.com/mcp", ToolName: remote}}}
	}
	tests := []struct {
		name   string
		tools  []*wfv1.ToolDefinition
		fields []string // violated fields, none when valid
	}{
		{"ref", []*wfv1.ToolDefinition{ref("", "customer")}, nil},
		{"renamed ref", []*wfv1.ToolDefinition{ref("cust", "customer"), ref("", "customer")}, nil},
		{"duplicate ref", []*wfv1.ToolDefinition{ref("", "customer"), ref("", "customer")}, []string{"params.tools[1].name"}},
		{"ref with schema", []*wfv1.ToolDefinition{{InputSchema: obj, Implementation: &wfv1.ToolDefinition_CatalogRef{CatalogRef: "customer"}}},
			[]string{"params.tools[0].input_schema"}},
		{"bad ref", []*wfv1.ToolDefinition{ref("", "no such")}, []string{"params.tools[0].catalog_ref"}},
		{"mcp", []*wfv1.ToolDefinition{mcpTool("", "search")}, nil},
		{"mcp duplicate of ref", []*wfv1.ToolDefinition{ref("", "customer"), mcpTool("", "customer")}, []string{"params.tools[1].name"}},
		{"mcp without schema", []*wfv1.ToolDefinition{{Implementation: &wfv1.ToolDefinition_Mcp{Mcp: &wfv1.McpTool{ServerUrl: "https://m.example.com", ToolName: "x"}}}},
			[]string{"params.tools[0].input_schema"}},
		{"mcp odd name", []*wfv1.ToolDefinition{mcpTool("", "a.b")}, []string{"params.tools[0].name"}},
		{"mcp plain http", []*wfv1.ToolDefinition{{Name: "x", InputSchema: obj,
			Implementation: &wfv1.ToolDefinition_Mcp{Mcp: &wfv1.McpTool{ServerUrl: "http://m.example.com", ToolName: "x"}}}}, []string{"params.tools[0].mcp.server_url"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v fault.Violations
			validateTools(&v, tc.tools)
			err := v.Err()
			if tc.fields == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, fault.ErrInvalidArgument)
			for _, f := range tc.fields {
				require.Contains(t, err.Error(), f)
			}
		})
	}

	params := &wfv1.RunParams{Tools: []*wfv1.ToolDefinition{ref("", "customer")}}
	require.NoError(t, checkCatalogTools(b.acme, b.st, params))
	err = checkCatalogTools(b.other, b.st, params)
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
	require.Contains(t, err.Error(), `no catalog tool named "customer"`)
}
