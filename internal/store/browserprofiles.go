package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wayfinder/wayfinder/internal/secrets"
)

// Persistent browser profiles (BrowserConfig.profile): the cookies and
// localStorage a run saved under a name, sealed. The store keeps the bytes
// it is given; their format is the worker's.

// browserProfileAAD binds a sealed profile to its tenant and name, so
// sealed bytes copied to another row do not open.
func browserProfileAAD(tenant, name string) []byte {
	return []byte("profile:" + tenant + ":" + name)
}

// SaveBrowserProfile seals state with kr's primary key and stores it as
// the tenant's profile name, replacing what was there. An unknown tenant is
// an error wrapping fault.ErrNotFound.
func (s *Store) SaveBrowserProfile(ctx context.Context, kr *secrets.Keyring, tenant, name string, state []byte) error {
	sealed := kr.Seal(state, browserProfileAAD(tenant, name))
	_, err := s.pool.Exec(ctx, `
		INSERT INTO browser_profiles (tenant_id, name, key_id, sealed) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, name) DO UPDATE SET key_id = excluded.key_id, sealed = excluded.sealed, updated_at = now()`,
		tenant, name, kr.PrimaryID(), sealed)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" {
			return fmt.Errorf("tenant %q: %w", tenant, errNotFound)
		}
		return fmt.Errorf("save browser profile %q: %w", name, err)
	}
	return nil
}

// LoadBrowserProfile returns the opened state of the tenant's profile
// name; a profile never saved is an error wrapping fault.ErrNotFound.
func (s *Store) LoadBrowserProfile(ctx context.Context, kr *secrets.Keyring, tenant, name string) ([]byte, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, `SELECT sealed FROM browser_profiles WHERE tenant_id = $1 AND name = $2`,
		tenant, name).Scan(&sealed)
	if err != nil {
		return nil, notFound("browser profile", name, err)
	}
	state, err := kr.Open(sealed, browserProfileAAD(tenant, name))
	if err != nil {
		return nil, fmt.Errorf("open browser profile %q: %w", name, err)
	}
	return state, nil
}
