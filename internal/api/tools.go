package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
	"github.com/wayfinder/wayfinder/internal/tools"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// Limits of the tool catalog.
const (
	// MaxTenantTools is how many catalog tools one tenant may keep.
	MaxTenantTools = 500
	// importTimeout bounds connecting to an MCP server and listing its
	// tools.
	importTimeout = 30 * time.Second
)

// prefixPattern is what ImportMcpServer accepts as a name prefix.
var prefixPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{0,32}$`)

// ToolService implements wayfinder.v1.ToolService: a tenant's tool catalog
// of webhook tools and imported MCP tools, which runs reference by name.
type ToolService struct {
	wfv1.UnimplementedToolServiceServer
	store   *store.Store
	keyring *secrets.Keyring
	client  *http.Client
}

// NewToolService returns the tool catalog service. keyring seals webhook
// header values and opens MCP credentials (nil: neither is possible);
// client reaches MCP servers on import (the runs' egress client, so the
// same private-network policy applies; nil: a plain client).
func NewToolService(st *store.Store, keyring *secrets.Keyring, client *http.Client) *ToolService {
	return &ToolService{store: st, keyring: keyring, client: client}
}

// CreateTool implements wayfinder.v1.ToolService.
func (s *ToolService) CreateTool(ctx context.Context, req *wfv1.CreateToolRequest) (*wfv1.CatalogTool, error) {
	t := req.GetTool()
	var v fault.Violations
	switch {
	case t == nil:
		v.Add("tool", "required")
	case t.GetWebhook() == nil:
		v.Add("tool.webhook", "required: the catalog creates webhook tools; MCP tools are imported with ImportMcpServer")
	default:
		d, err := worker.ToolDefinitions([]*wfv1.ToolDefinition{t})
		if err != nil {
			v.Add("tool", "%v", err)
			break
		}
		for _, p := range tools.Validate(d[0], runner.Reserved) {
			v.Add("tool."+p.Field, "%s", p.Message)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := s.checkRoom(ctx, 1, ""); err != nil {
		return nil, err
	}
	return s.store.CreateTool(ctx, s.keyring, tenant.ID(ctx), t)
}

// checkRoom refuses adding n tools (in place of serverURL's, when set)
// past MaxTenantTools.
func (s *ToolService) checkRoom(ctx context.Context, n int, serverURL string) error {
	own, err := s.store.ListTools(ctx, tenant.ID(ctx))
	if err != nil {
		return err
	}
	kept := 0
	for _, t := range own {
		if serverURL == "" || t.GetDefinition().GetMcp().GetServerUrl() != serverURL {
			kept++
		}
	}
	if kept+n > MaxTenantTools {
		return fmt.Errorf("%w: the tenant has %d catalog tools and may keep %d; delete some first",
			fault.ErrFailedPrecondition, kept, MaxTenantTools)
	}
	return nil
}

// ImportMcpServer implements wayfinder.v1.ToolService.
func (s *ToolService) ImportMcpServer(ctx context.Context, req *wfv1.ImportMcpServerRequest) (*wfv1.ImportMcpServerResponse, error) {
	var v fault.Violations
	if msg := tools.CheckServerURL(req.GetServerUrl()); msg != "" {
		v.Add("server_url", "%s", msg)
	}
	if c := req.GetCredential(); c != "" && !credentialNamePattern.MatchString(c) {
		v.Add("credential", "must be a credential name (%s)", credentialNamePattern)
	}
	if !prefixPattern.MatchString(req.GetPrefix()) {
		v.Add("prefix", "at most 32 characters of letters, digits, '_' and '-'")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	token, err := s.credentialToken(ctx, req.GetCredential())
	if err != nil {
		return nil, err
	}

	listCtx, cancel := context.WithTimeout(ctx, importTimeout)
	defer cancel()
	defs, err := tools.ListMCP(listCtx, s.client, req.GetServerUrl(), token)
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%w: the MCP server's tools cannot be listed: %s", fault.ErrUnavailable, te.Message)
		}
		if ctx.Err() == nil && listCtx.Err() != nil {
			return nil, fmt.Errorf("%w: the MCP server did not answer within %v", fault.ErrUnavailable, importTimeout)
		}
		return nil, err
	}

	resp := &wfv1.ImportMcpServerResponse{}
	var keep []*wfv1.ToolDefinition
	seen := map[string]bool{}
	for _, d := range defs {
		skip := func(format string, args ...any) {
			resp.Skipped = append(resp.Skipped, &wfv1.SkippedMcpTool{ToolName: d.MCP.ToolName, Reason: fmt.Sprintf(format, args...)})
		}
		d.Name = importedName(req.GetPrefix(), d.MCP.ToolName)
		if len(d.InputSchema) == 0 {
			d.InputSchema = []byte(`{"type":"object"}`)
		}
		if ps := tools.Validate(d, runner.Reserved); len(ps) > 0 {
			msgs := make([]string, len(ps))
			for i, p := range ps {
				msgs[i] = p.Field + ": " + p.Message
			}
			skip("%s", strings.Join(msgs, "; "))
			continue
		}
		if seen[d.Name] {
			skip("its name %q is taken by another of the server's tools", d.Name)
			continue
		}
		seen[d.Name] = true
		pd, err := protoDefinition(d)
		if err != nil {
			skip("%v", err)
			continue
		}
		keep = append(keep, pd)
	}
	if err := s.checkRoom(ctx, len(keep), req.GetServerUrl()); err != nil {
		return nil, err
	}
	resp.Tools, err = s.store.ReplaceMcpTools(ctx, tenant.ID(ctx), req.GetServerUrl(), req.GetCredential(), keep)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// credentialToken opens the named credential and returns the bearer it
// gives an MCP server; "" for no credential.
func (s *ToolService) credentialToken(ctx context.Context, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if s.keyring == nil {
		return "", fmt.Errorf("%w: stored credentials cannot be opened: the server has no encryption key", fault.ErrFailedPrecondition)
	}
	c, err := s.store.OpenCredential(ctx, s.keyring, tenant.ID(ctx), name)
	if errors.Is(err, fault.ErrNotFound) {
		var v fault.Violations
		v.Add("credential", "no credential named %q", name)
		return "", v.Err()
	}
	if err != nil {
		return "", err
	}
	token := worker.McpToken(c.Values)
	if token == "" {
		var v fault.Violations
		v.Add("credential", "credential %q has no api_key or token field", name)
		return "", v.Err()
	}
	// Every opening of a credential is on record, as the worker's are.
	if err := s.store.RecordAudit(ctx, store.Audit{Tenant: tenant.ID(ctx), Kind: store.AuditCredentialUsed,
		Actor: tenant.From(ctx).Actor(), Subject: name, Details: map[string]any{"use": "mcp_import", "version": c.Version}}); err != nil {
		return "", fmt.Errorf("record the credential's use: %w", err)
	}
	return token, nil
}

// importedName is the catalog name of a server's tool: prefix + its name,
// with characters a tool name cannot hold replaced by '_', at most 64.
func importedName(prefix, toolName string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, prefix+toolName)
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// protoDefinition is the ToolDefinition of an MCP tool.
func protoDefinition(d tools.Definition) (*wfv1.ToolDefinition, error) {
	out := &wfv1.ToolDefinition{Name: d.Name, Description: d.Description,
		Implementation: &wfv1.ToolDefinition_Mcp{Mcp: &wfv1.McpTool{ServerUrl: d.MCP.ServerURL, ToolName: d.MCP.ToolName}}}
	out.InputSchema = &structpb.Struct{}
	if err := protojson.Unmarshal(d.InputSchema, out.InputSchema); err != nil {
		return nil, fmt.Errorf("input_schema: not a JSON object: %w", err)
	}
	if len(d.OutputSchema) > 0 && string(d.OutputSchema) != "null" {
		out.OutputSchema = &structpb.Struct{}
		if err := protojson.Unmarshal(d.OutputSchema, out.OutputSchema); err != nil {
			return nil, fmt.Errorf("output_schema: not a JSON object: %w", err)
		}
	}
	return out, nil
}

// ListTools implements wayfinder.v1.ToolService.
func (s *ToolService) ListTools(ctx context.Context, _ *wfv1.ListToolsRequest) (*wfv1.ListToolsResponse, error) {
	ts, err := s.store.ListTools(ctx, tenant.ID(ctx))
	if err != nil {
		return nil, err
	}
	return &wfv1.ListToolsResponse{Tools: ts}, nil
}

// GetTool implements wayfinder.v1.ToolService. Another tenant's tool is
// NOT_FOUND.
func (s *ToolService) GetTool(ctx context.Context, req *wfv1.GetToolRequest) (*wfv1.CatalogTool, error) {
	if err := checkToolName(req.GetName()); err != nil {
		return nil, err
	}
	return s.store.GetTool(ctx, tenant.ID(ctx), req.GetName())
}

// DeleteTool implements wayfinder.v1.ToolService. Runs already queued that
// reference the tool end with a tool execution error when they start.
func (s *ToolService) DeleteTool(ctx context.Context, req *wfv1.DeleteToolRequest) (*emptypb.Empty, error) {
	if err := checkToolName(req.GetName()); err != nil {
		return nil, err
	}
	if err := s.store.DeleteTool(ctx, tenant.ID(ctx), req.GetName()); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func checkToolName(name string) error {
	if !toolNamePattern.MatchString(name) {
		var v fault.Violations
		v.Add("name", "must be a tool name (%s)", toolNamePattern)
		return v.Err()
	}
	return nil
}
