package api

import (
	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// validateCatalogTool checks a run's tool that names the tool catalog.
func validateCatalogTool(v *fault.Violations, field string, t *wfv1.ToolDefinition) {
	v.Unimplemented(field+".catalog_ref", "the tool catalog arrives with a later release; define a webhook tool")
}

// validateMcpTool checks a run's tool of an MCP server.
func validateMcpTool(v *fault.Violations, field string, t *wfv1.ToolDefinition) {
	v.Unimplemented(field+".mcp", "MCP tools arrive with a later release; define a webhook tool")
}
