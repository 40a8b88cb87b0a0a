package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/tools"
	"github.com/wayfinder/wayfinder/internal/tools/mcptest"
)

const mcpToken = "mcp-bearer-5e4d3c2b1a"

// mcpSet builds a set of the test server's tools as ListMCP imports them,
// authenticated with token; outputSchema, when set, replaces
// lookup_order's.
func mcpSet(t *testing.T, srv *mcptest.Server, token, outputSchema string) *tools.Set {
	t.Helper()
	defs, err := tools.ListMCP(t.Context(), nil, srv.URL, srv.Token)
	require.NoError(t, err)
	for i := range defs {
		if defs[i].Name == "lookup_order" && outputSchema != "" {
			defs[i].OutputSchema = json.RawMessage(outputSchema)
		}
	}
	set, err := tools.NewSet(defs, tools.Options{MCPAuth: func(_ context.Context, url string) (string, error) {
		require.Equal(t, srv.URL, url)
		return token, nil
	}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, set.Close()) })
	return set
}

func TestListMCP(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcpToken)
	defs, err := tools.ListMCP(t.Context(), nil, srv.URL, mcpToken)
	require.NoError(t, err)
	byName := map[string]tools.Definition{}
	for _, d := range defs {
		byName[d.Name] = d
		require.Empty(t, tools.Validate(d, nil), d.Name)
		require.Equal(t, srv.URL, d.MCP.ServerURL)
	}
	require.Len(t, byName, 3)
	require.Equal(t, "Look up an order by ID.", byName["lookup_order"].Description)
	require.Contains(t, string(byName["lookup_order"].InputSchema), `"order_id"`)
	require.Contains(t, string(byName["lookup_order"].OutputSchema), `"status"`)

	_, err = tools.ListMCP(t.Context(), nil, srv.URL, "wrong-token-123")
	var te *tools.Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, tools.CodeUnreachable, te.Code)
	require.NotContains(t, te.Message, "wrong-token-123")

	_, err = tools.ListMCP(t.Context(), nil, "http://mcp.example.com/mcp", "")
	require.ErrorAs(t, err, &te)
	require.Contains(t, te.Message, "https")
}

// TestMCPCall: arguments checked before the call, structured and text
// answers, tool errors, output schema, one session per server for many
// calls, and nothing after Close.
func TestMCPCall(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcpToken)
	set := mcpSet(t, srv, mcpToken, "")
	ctx := t.Context()

	tests := []struct {
		name, tool, args string
		want             string // the answer, when the call succeeds
		code             string // the error code, when it fails
		msg              string
	}{
		{name: "structured", tool: "lookup_order", args: `{"order_id":"A-1"}`, want: `{"order_id":"A-1","status":"shipped"}`},
		{name: "text", tool: "echo", args: `{"text":"hi"}`, want: `{"content":"echo: hi"}`},
		{name: "tool error", tool: "fail", args: `{"text":"x"}`, code: tools.CodeToolError, msg: "the order system is down"},
		{name: "invalid arguments", tool: "lookup_order", args: `{"order_id":7}`, code: tools.CodeInvalidArguments},
		{name: "unknown", tool: "nope", code: tools.CodeUnknownTool},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := set.Call(ctx, tc.tool, json.RawMessage(tc.args))
			if tc.code == "" {
				require.NoError(t, err)
				require.JSONEq(t, tc.want, string(got))
				return
			}
			var te *tools.Error
			require.ErrorAs(t, err, &te)
			require.Equal(t, tc.code, te.Code, te.Message)
			require.Contains(t, te.Message, tc.msg)
			require.NotContains(t, te.Message, mcpToken)
		})
	}

	// Calls in parallel share the one session.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, err := set.Call(ctx, "echo", json.RawMessage(`{"text":"p"}`))
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Equal(t, 2, srv.Sessions(), "ListMCP's and the set's")
	require.Equal(t, 7, srv.Calls())

	require.NoError(t, set.Close())
	_, err := set.Call(ctx, "echo", json.RawMessage(`{"text":"late"}`))
	var te *tools.Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, tools.CodeUnreachable, te.Code)
	require.Equal(t, 7, srv.Calls())
}

func TestMCPOutputSchema(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, "")
	set := mcpSet(t, srv, "", `{"type":"object","properties":{"status":{"const":"delivered"}},"required":["status"]}`)
	_, err := set.Call(t.Context(), "lookup_order", json.RawMessage(`{"order_id":"A-2"}`))
	var te *tools.Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, tools.CodeInvalidOutput, te.Code)
	require.Contains(t, te.Message, "output schema")
}

// TestMCPAuth: the bearer MCPAuth gives is sent; a wrong one fails the
// call as unreachable without showing the token, and an MCPAuth error is
// the call's.
func TestMCPAuth(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcpToken)
	ok := mcpSet(t, srv, mcpToken, "")
	_, err := ok.Call(t.Context(), "echo", json.RawMessage(`{"text":"a"}`))
	require.NoError(t, err)

	bad := mcpSet(t, srv, "not-the-token-42", "")
	_, err = bad.Call(t.Context(), "echo", json.RawMessage(`{"text":"a"}`))
	var te *tools.Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, tools.CodeUnreachable, te.Code)
	require.NotContains(t, te.Message, "not-the-token-42")
	require.NotContains(t, te.Message, srv.URL)

	defs, err := tools.ListMCP(t.Context(), nil, srv.URL, mcpToken)
	require.NoError(t, err)
	failing, err := tools.NewSet(defs, tools.Options{MCPAuth: func(context.Context, string) (string, error) {
		return "", errors.New("credential \"crm\" not found")
	}})
	require.NoError(t, err)
	defer failing.Close()
	_, err = failing.Call(t.Context(), "echo", json.RawMessage(`{"text":"a"}`))
	require.ErrorAs(t, err, &te)
	require.True(t, strings.Contains(te.Message, `credential "crm" not found`), te.Message)
}

func TestValidateMCP(t *testing.T) {
	t.Parallel()
	base := tools.Definition{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}
	tests := []struct {
		name  string
		mcp   tools.MCPTool
		field string
	}{
		{"ok", tools.MCPTool{ServerURL: "https://mcp.example.com/mcp", ToolName: "x"}, ""},
		{"loopback http", tools.MCPTool{ServerURL: "http://127.0.0.1:9/mcp", ToolName: "x"}, ""},
		{"plain http", tools.MCPTool{ServerURL: "http://mcp.example.com/mcp", ToolName: "x"}, "mcp.server_url"},
		{"no tool", tools.MCPTool{ServerURL: "https://mcp.example.com/mcp"}, "mcp.tool_name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := base
			d.MCP = &tc.mcp
			ps := tools.Validate(d, nil)
			if tc.field == "" {
				require.Empty(t, ps)
				return
			}
			require.Len(t, ps, 1)
			require.Equal(t, tc.field, ps[0].Field)
		})
	}
}
