// Package mcptest serves a small MCP server (streamable HTTP, the official
// Go SDK) on 127.0.0.1 for tests of MCP tools: lookup_order answers with
// structured content, echo with text, fail with a tool error.
package mcptest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// OrderInput is lookup_order's input.
type OrderInput struct {
	OrderID string `json:"order_id" jsonschema:"the order's ID"`
}

// OrderOutput is lookup_order's output.
type OrderOutput struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
}

// EchoInput is echo's input.
type EchoInput struct {
	Text string `json:"text"`
}

// Server is a running test MCP server.
type Server struct {
	// URL is the server's endpoint.
	URL string
	// Token, when not empty, is the bearer every request must carry;
	// others are answered 401.
	Token    string
	sessions atomic.Int64
	calls    atomic.Int64
}

// Sessions is how many sessions clients opened.
func (s *Server) Sessions() int { return int(s.sessions.Load()) }

// Calls is how many tool calls the server answered.
func (s *Server) Calls() int { return int(s.calls.Load()) }

// Start serves a test MCP server until the test ends; token, when not
// empty, is required as the bearer of every request.
func Start(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{Token: token}
	server := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { s.sessions.Add(1) },
	})
	mcp.AddTool(server, &mcp.Tool{Name: "lookup_order", Description: "Look up an order by ID."},
		func(_ context.Context, _ *mcp.CallToolRequest, in OrderInput) (*mcp.CallToolResult, OrderOutput, error) {
			s.calls.Add(1)
			return nil, OrderOutput{OrderID: in.OrderID, Status: "shipped"}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
			s.calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ EchoInput) (*mcp.CallToolResult, any, error) {
			s.calls.Add(1)
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the order system is down"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	s.URL = strings.TrimSuffix(hs.URL, "/") + "/mcp"
	return s
}
