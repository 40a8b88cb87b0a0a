package api

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
	"github.com/wayfinder/wayfinder/internal/tools"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// toolNamePattern is a tool's name, as model vendors accept it (and as
// tools.Validate checks it).
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validateCatalogTool checks a run's tool that names the tool catalog:
// the reference is a tool name, the tool's own name (optional: the model
// sees it instead of the catalog's) is valid, and the schemas and
// description come from the catalog. That the tool exists is
// checkCatalogTools'.
func validateCatalogTool(v *fault.Violations, field string, t *wfv1.ToolDefinition) {
	if !toolNamePattern.MatchString(t.GetCatalogRef()) {
		v.Add(field+".catalog_ref", "must be a catalog tool's name (%s)", toolNamePattern)
	}
	if t.Name != "" {
		switch {
		case !toolNamePattern.MatchString(t.Name):
			v.Add(field+".name", "must be 1-64 characters of letters, digits, '_' and '-'")
		case runner.Reserved(t.Name):
			v.Add(field+".name", "%q is the name of a built-in tool", t.Name)
		}
	} else if runner.Reserved(t.GetCatalogRef()) {
		v.Add(field+".name", "%q is the name of a built-in tool; give the tool another name", t.GetCatalogRef())
	}
	if t.Description != "" {
		v.Add(field+".description", "comes from the catalog; leave it empty")
	}
	if t.InputSchema != nil {
		v.Add(field+".input_schema", "comes from the catalog; leave it empty")
	}
	if t.OutputSchema != nil {
		v.Add(field+".output_schema", "comes from the catalog; leave it empty")
	}
}

// validateMcpTool checks a run's tool of an MCP server: its server URL
// and tool name, and its schemas as for a webhook tool. Without a name of
// its own the tool is named as on its server, which must then be a valid
// tool name.
func validateMcpTool(v *fault.Violations, field string, t *wfv1.ToolDefinition) {
	d, err := worker.ToolDefinitions([]*wfv1.ToolDefinition{t})
	if err != nil {
		v.Add(field, "%v", err)
		return
	}
	for _, p := range tools.Validate(d[0], runner.Reserved) {
		if p.Field == "name" && t.Name == "" {
			v.Add(field+".name", "required when mcp.tool_name is not a valid tool name (%s)", p.Message)
			continue
		}
		v.Add(field+"."+p.Field, "%s", p.Message)
	}
}

// checkCatalogTools refuses a run whose catalog references name no tool of
// the caller's tenant.
func checkCatalogTools(ctx context.Context, st *store.Store, p *wfv1.RunParams) error {
	var v fault.Violations
	for i, t := range p.GetTools() {
		ref := t.GetCatalogRef()
		if ref == "" {
			continue
		}
		_, err := st.GetTool(ctx, tenant.ID(ctx), ref)
		switch {
		case errors.Is(err, fault.ErrNotFound):
			v.Add(fmt.Sprintf("params.tools[%d].catalog_ref", i), "no catalog tool named %q", ref)
		case err != nil:
			return err
		}
	}
	return v.Err()
}
