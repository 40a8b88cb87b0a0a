package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// KeyPrefix starts every Wayfinder API key.
const KeyPrefix = "wf_"

// NewAPIKey returns a new random API key: KeyPrefix and 256 random bits.
func NewAPIKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails on supported platforms
	return KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// keyDisplayPrefix is the part of a key shown to recognise it.
func keyDisplayPrefix(key string) string {
	if len(key) > len(KeyPrefix)+8 {
		return key[:len(KeyPrefix)+8]
	}
	return KeyPrefix
}

// Authenticator identifies the caller of every RPC from its API key
// ("authorization: Bearer <key>") and puts it in the context
// (tenant.From). In local mode (no keys configured) every caller is the
// default tenant's local admin.
type Authenticator struct {
	// Store looks keys up by hash.
	Store *store.Store
	// Local disables API keys (loopback-only single-user mode).
	Local bool
}

// public are methods any caller may use without a key.
func public(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.") || strings.HasPrefix(method, "/grpc.reflection.")
}

func (a *Authenticator) authenticate(ctx context.Context, method string) (context.Context, error) {
	if public(method) {
		return ctx, nil
	}
	if a.Local {
		return tenant.With(ctx, tenant.Caller{Tenant: tenant.Default, Admin: true, Local: true}), nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	var key string
	for _, v := range md.Get("authorization") {
		if scheme, rest, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "bearer") {
			key = strings.TrimSpace(rest)
		}
	}
	if key == "" {
		return nil, fmt.Errorf("missing API key: send \"authorization: Bearer <key>\": %w", fault.ErrUnauthenticated)
	}
	k, err := a.Store.LookupAPIKey(ctx, secrets.HashToken(key))
	if err != nil {
		return nil, err
	}
	return tenant.With(ctx, tenant.Caller{Tenant: k.TenantId, KeyID: k.Id, Admin: k.Admin}), nil
}

// Unary authenticates unary calls.
func (a *Authenticator) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := a.authenticate(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// Stream authenticates streaming calls.
func (a *Authenticator) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := a.authenticate(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, &callerStream{ServerStream: ss, ctx: ctx})
	}
}

type callerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *callerStream) Context() context.Context { return s.ctx }

// AccessService implements wayfinder.v1.AccessService.
type AccessService struct {
	wfv1.UnimplementedAccessServiceServer
	store *store.Store
	log   *slog.Logger
}

// NewAccessService returns the access service.
func NewAccessService(st *store.Store, log *slog.Logger) *AccessService {
	return &AccessService{store: st, log: log}
}

var tenantIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

func requireAdmin(ctx context.Context) error {
	if !tenant.From(ctx).Admin {
		return fmt.Errorf("this call needs an admin API key: %w", fault.ErrPermissionDenied)
	}
	return nil
}

// CreateTenant implements wayfinder.v1.AccessService.
func (s *AccessService) CreateTenant(ctx context.Context, req *wfv1.CreateTenantRequest) (*wfv1.Tenant, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	var v fault.Violations
	t := req.GetTenant()
	if !tenantIDPattern.MatchString(t.GetId()) {
		v.Add("tenant.id", "must match %s", tenantIDPattern)
	}
	if len(t.GetDisplayName()) > 200 {
		v.Add("tenant.display_name", "at most 200 characters")
	}
	if t.GetMaxConcurrentRuns() < 0 || t.GetMaxConcurrentRuns() > 10000 {
		v.Add("tenant.max_concurrent_runs", "must be between 0 and 10000")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	out, err := s.store.CreateTenant(ctx, t)
	if err != nil {
		return nil, err
	}
	s.audit(ctx, store.Audit{Kind: store.AuditTenantCreated, Subject: out.Id})
	return out, nil
}

// ListTenants implements wayfinder.v1.AccessService.
func (s *AccessService) ListTenants(ctx context.Context, _ *wfv1.ListTenantsRequest) (*wfv1.ListTenantsResponse, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	ts, err := s.store.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	return &wfv1.ListTenantsResponse{Tenants: ts}, nil
}

// UpdateTenant implements wayfinder.v1.AccessService.
func (s *AccessService) UpdateTenant(ctx context.Context, req *wfv1.UpdateTenantRequest) (*wfv1.Tenant, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	var v fault.Violations
	if req.MaxConcurrentRuns != nil && (req.GetMaxConcurrentRuns() < 0 || req.GetMaxConcurrentRuns() > 10000) {
		v.Add("max_concurrent_runs", "must be between 0 and 10000")
	}
	if len(req.GetDisplayName()) > 200 {
		v.Add("display_name", "at most 200 characters")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	t, err := s.store.UpdateTenant(ctx, req.GetTenantId(), req.GetDisplayName(), req.MaxConcurrentRuns)
	if err != nil {
		return nil, err
	}
	s.audit(ctx, store.Audit{Kind: store.AuditTenantUpdated, Subject: t.Id,
		Details: map[string]any{"max_concurrent_runs": t.MaxConcurrentRuns}})
	return t, nil
}

// CreateApiKey implements wayfinder.v1.AccessService.
func (s *AccessService) CreateApiKey(ctx context.Context, req *wfv1.CreateApiKeyRequest) (*wfv1.CreateApiKeyResponse, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	if len(req.GetName()) > 200 {
		var v fault.Violations
		v.Add("name", "at most 200 characters")
		return nil, v.Err()
	}
	key := NewAPIKey()
	k, err := s.store.CreateAPIKey(ctx, store.NewAPIKey{
		Tenant: req.GetTenantId(), Name: req.GetName(), Prefix: keyDisplayPrefix(key),
		Hash: secrets.HashToken(key), Admin: req.GetAdmin(),
	})
	if err != nil {
		return nil, err
	}
	s.audit(ctx, store.Audit{Tenant: k.TenantId, Kind: store.AuditAPIKeyCreated, Subject: k.Id,
		Details: map[string]any{"name": k.Name, "admin": k.Admin, "prefix": k.Prefix}})
	return &wfv1.CreateApiKeyResponse{ApiKey: k, Secret: key}, nil
}

// ListApiKeys implements wayfinder.v1.AccessService.
func (s *AccessService) ListApiKeys(ctx context.Context, req *wfv1.ListApiKeysRequest) (*wfv1.ListApiKeysResponse, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	if _, err := s.store.GetTenant(ctx, req.GetTenantId()); err != nil {
		return nil, err
	}
	keys, err := s.store.ListAPIKeys(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	return &wfv1.ListApiKeysResponse{ApiKeys: keys}, nil
}

// RevokeApiKey implements wayfinder.v1.AccessService.
func (s *AccessService) RevokeApiKey(ctx context.Context, req *wfv1.RevokeApiKeyRequest) (*emptypb.Empty, error) {
	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}
	if err := s.store.RevokeAPIKey(ctx, req.GetTenantId(), req.GetKeyId()); err != nil {
		return nil, err
	}
	s.audit(ctx, store.Audit{Tenant: req.GetTenantId(), Kind: store.AuditAPIKeyRevoked, Subject: req.GetKeyId()})
	return &emptypb.Empty{}, nil
}

// WhoAmI implements wayfinder.v1.AccessService.
func (s *AccessService) WhoAmI(ctx context.Context, _ *wfv1.WhoAmIRequest) (*wfv1.WhoAmIResponse, error) {
	c := tenant.From(ctx)
	return &wfv1.WhoAmIResponse{TenantId: c.Tenant, KeyId: c.KeyID, Admin: c.Admin, LocalMode: c.Local}, nil
}

// ListAuditEvents implements wayfinder.v1.AccessService.
func (s *AccessService) ListAuditEvents(ctx context.Context, req *wfv1.ListAuditEventsRequest) (*wfv1.ListAuditEventsResponse, error) {
	var v fault.Violations
	size := pageSize(&v, req.GetPageSize(), 100, 500)
	if len(req.GetKind()) > 100 {
		v.Add("kind", "at most 100 characters")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	evs, next, err := s.store.ListAudit(ctx, store.AuditFilter{Tenant: tenant.ID(ctx), Kind: req.GetKind(),
		RunID: req.GetRunId(), PageSize: size, PageToken: req.GetPageToken()})
	if err != nil {
		return nil, err
	}
	return &wfv1.ListAuditEventsResponse{Events: evs, NextPageToken: next}, nil
}

// audit records an audit event by the caller; a failure is logged (the
// change it describes has happened).
func (s *AccessService) audit(ctx context.Context, a store.Audit) {
	recordAudit(ctx, s.store, s.log, a)
}

func recordAudit(ctx context.Context, st *store.Store, log *slog.Logger, a store.Audit) {
	if a.Actor == "" {
		a.Actor = tenant.From(ctx).Actor()
	}
	if a.Tenant == "" {
		a.Tenant = tenant.ID(ctx)
	}
	if err := st.RecordAudit(context.WithoutCancel(ctx), a); err != nil {
		log.WarnContext(ctx, "recording audit event", "kind", a.Kind, "error", err)
	}
}
