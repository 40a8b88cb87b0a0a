// Package mcpserver is Wayfinder's MCP endpoint (streamable HTTP, the
// official MCP Go SDK): Wayfinder as a tool for other agents.
//
// The tool computer_use hands a whole browser task to Wayfinder's agent
// and returns its result with the final screenshot; it goes through the
// API's RunService.RunAndWait (flat string parameters), so validation,
// tenant scoping, secret sealing and queueing are the API's.
//
// The session tools (open_session, snapshot, click, fill, type, press_key,
// scroll, navigate, close_session) let an agent drive a governed browser
// itself. A session is a run like any other (domain policy, auth,
// recording of steps, screenshots and model calls) whose controller model
// is the MCP client: the model of provider Provider, built by
// Sessions.Model, waits in Complete for the client's next tool call and
// hands the runner's answer back. The hand-over is a channel in this
// process, so a session is pinned to the replica that opened it.
//
// Every HTTP request and every tool call is authenticated by the API's
// Authenticator (Bearer API key, or local mode) and acts as the caller's
// tenant.
package mcpserver
