// Package tenant carries the caller's identity (tenant and API key) from
// the API's authentication interceptor to the handlers. Every store query
// made for a caller is scoped by the tenant found here.
package tenant

import "context"

// Default is the tenant of local single-user mode and of runs created
// before tenants existed. It always exists.
const Default = "default"

// Caller is who made a request.
type Caller struct {
	// Tenant owns everything the caller creates and is all it can see.
	Tenant string
	// KeyID is the API key's ID; empty in local mode.
	KeyID string
	// Admin keys may manage tenants and keys.
	Admin bool
	// Local is true when the server runs without API keys.
	Local bool
}

// Actor names the caller in audit events: "key:<id>" or "local".
func (c Caller) Actor() string {
	if c.KeyID == "" {
		return "local"
	}
	return "key:" + c.KeyID
}

type ctxKey struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From returns the caller ctx carries. A context without one (server
// internals, tests of handlers) is the default tenant's local caller.
func From(ctx context.Context) Caller {
	if c, ok := ctx.Value(ctxKey{}).(Caller); ok {
		return c
	}
	return Caller{Tenant: Default, Local: true}
}

// ID returns the tenant of ctx's caller.
func ID(ctx context.Context) string { return From(ctx).Tenant }
