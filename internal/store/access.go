package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// CreateTenant creates a tenant; an existing ID wraps fault.ErrAlreadyExists.
func (s *Store) CreateTenant(ctx context.Context, t *wfv1.Tenant) (*wfv1.Tenant, error) {
	out, err := scanTenant(s.pool.QueryRow(ctx, `
		INSERT INTO tenants (id, display_name, max_concurrent_runs) VALUES ($1, $2, $3)
		RETURNING id, display_name, max_concurrent_runs, created_at`,
		t.GetId(), t.GetDisplayName(), t.GetMaxConcurrentRuns()))
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return nil, fmt.Errorf("tenant %q: %w", t.GetId(), fault.ErrAlreadyExists)
		}
		return nil, fmt.Errorf("create tenant: %w", err)
	}
	return out, nil
}

// GetTenant returns a tenant.
func (s *Store) GetTenant(ctx context.Context, id string) (*wfv1.Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx, `
		SELECT id, display_name, max_concurrent_runs, created_at FROM tenants WHERE id = $1`, id))
	if err != nil {
		return nil, notFound("tenant", id, err)
	}
	return t, nil
}

// ListTenants lists every tenant by ID.
func (s *Store) ListTenants(ctx context.Context) ([]*wfv1.Tenant, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, display_name, max_concurrent_runs, created_at FROM tenants ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	defer rows.Close()
	var out []*wfv1.Tenant
	for rows.Next() {
		t, err := scanTenant(rows)
		if err != nil {
			return nil, fmt.Errorf("scan tenant: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// UpdateTenant changes a tenant's display name (when non-empty) and limit
// (when non-nil).
func (s *Store) UpdateTenant(ctx context.Context, id, displayName string, maxConcurrent *int32) (*wfv1.Tenant, error) {
	t, err := scanTenant(s.pool.QueryRow(ctx, `
		UPDATE tenants SET display_name = coalesce(NULLIF($2, ''), display_name),
			max_concurrent_runs = coalesce($3, max_concurrent_runs)
		WHERE id = $1
		RETURNING id, display_name, max_concurrent_runs, created_at`, id, displayName, maxConcurrent))
	if err != nil {
		return nil, notFound("tenant", id, err)
	}
	return t, nil
}

func scanTenant(row pgx.Row) (*wfv1.Tenant, error) {
	var (
		t       wfv1.Tenant
		created time.Time
	)
	if err := row.Scan(&t.Id, &t.DisplayName, &t.MaxConcurrentRuns, &created); err != nil {
		return nil, err
	}
	t.CreateTime = timestamppb.New(created)
	return &t, nil
}

// NewAPIKey is a key to store: its hash, never the key.
type NewAPIKey struct {
	Tenant string
	Name   string
	Prefix string
	Hash   []byte
	Admin  bool
}

const apiKeyColumns = `id, tenant_id, name, prefix, admin, created_at, last_used_at, revoked_at`

func scanAPIKey(row pgx.Row) (*wfv1.ApiKey, error) {
	var (
		k             wfv1.ApiKey
		id            uuid.UUID
		created       time.Time
		used, revoked *time.Time
	)
	if err := row.Scan(&id, &k.TenantId, &k.Name, &k.Prefix, &k.Admin, &created, &used, &revoked); err != nil {
		return nil, err
	}
	k.Id, k.CreateTime = id.String(), timestamppb.New(created)
	if used != nil {
		k.LastUsedTime = timestamppb.New(*used)
	}
	if revoked != nil {
		k.RevokeTime = timestamppb.New(*revoked)
	}
	return &k, nil
}

// CreateAPIKey stores a key's hash. An unknown tenant wraps
// fault.ErrNotFound.
func (s *Store) CreateAPIKey(ctx context.Context, nk NewAPIKey) (*wfv1.ApiKey, error) {
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `
		INSERT INTO api_keys (id, tenant_id, name, prefix, hash, admin) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING `+apiKeyColumns, uuid.New(), nk.Tenant, nk.Name, nk.Prefix, nk.Hash, nk.Admin))
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" {
			return nil, fmt.Errorf("tenant %q: %w", nk.Tenant, fault.ErrNotFound)
		}
		return nil, fmt.Errorf("create API key: %w", err)
	}
	return k, nil
}

// EnsureAPIKey stores the hash of a key configured outside the database
// (the bootstrap admin key) if it is not stored yet, and returns its
// record. A revoked key stays revoked.
func (s *Store) EnsureAPIKey(ctx context.Context, nk NewAPIKey) (*wfv1.ApiKey, error) {
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO api_keys (id, tenant_id, name, prefix, hash, admin) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (hash) DO NOTHING`, uuid.New(), nk.Tenant, nk.Name, nk.Prefix, nk.Hash, nk.Admin); err != nil {
		return nil, fmt.Errorf("ensure API key: %w", err)
	}
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE hash = $1`, nk.Hash))
	if err != nil {
		return nil, fmt.Errorf("load API key: %w", err)
	}
	return k, nil
}

// LookupAPIKey returns the live (not revoked) key with the given hash and
// records its use at most once a minute. An unknown or revoked key wraps
// fault.ErrUnauthenticated.
func (s *Store) LookupAPIKey(ctx context.Context, hash []byte) (*wfv1.ApiKey, error) {
	k, err := scanAPIKey(s.pool.QueryRow(ctx, `
		SELECT `+apiKeyColumns+` FROM api_keys WHERE hash = $1 AND revoked_at IS NULL`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("API key not recognised: %w", fault.ErrUnauthenticated)
	}
	if err != nil {
		return nil, fmt.Errorf("look up API key: %w", err)
	}
	if k.LastUsedTime == nil || time.Since(k.LastUsedTime.AsTime()) > time.Minute {
		_, _ = s.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = now() WHERE id = $1`, k.Id)
	}
	return k, nil
}

// ListAPIKeys lists a tenant's keys, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context, tenant string) ([]*wfv1.ApiKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	defer rows.Close()
	var out []*wfv1.ApiKey
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, fmt.Errorf("scan API key: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeAPIKey revokes one of a tenant's keys.
func (s *Store) RevokeAPIKey(ctx context.Context, tenant, id string) error {
	if !validUUID(id) {
		return fmt.Errorf("API key %q: %w", id, fault.ErrNotFound)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
		WHERE tenant_id = $1 AND id = $2`, tenant, id)
	if err != nil {
		return fmt.Errorf("revoke API key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("API key %q: %w", id, fault.ErrNotFound)
	}
	return nil
}
