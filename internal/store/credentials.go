package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/secrets"
)

// NewCredential is a credential to store.
type NewCredential struct {
	Tenant      string
	Name        string
	Type        wfv1.CredentialType
	Description string
	// Values are sealed before they are written; they are never logged.
	Values map[string]string
}

// OpenedCredential is a credential with its values, for a run.
type OpenedCredential struct {
	Name    string
	Type    wfv1.CredentialType
	Version int32
	Values  map[string]string
}

// credentialAAD binds sealed values to their tenant and name, so sealed
// bytes copied to another row do not open.
func credentialAAD(tenant, name string) []byte {
	return []byte("credential:" + tenant + ":" + name)
}

func sealValues(kr *secrets.Keyring, tenant, name string, values map[string]string) ([]byte, []string, error) {
	raw, err := json.Marshal(values)
	if err != nil {
		return nil, nil, fmt.Errorf("encode credential values: %w", err)
	}
	fields := make([]string, 0, len(values))
	for k := range values {
		fields = append(fields, k)
	}
	slices.Sort(fields)
	return kr.Seal(raw, credentialAAD(tenant, name)), fields, nil
}

const credentialColumns = `name, type, fields, description, version, key_id, created_at, updated_at, last_used_at`

func scanCredential(row pgx.Row) (*wfv1.Credential, error) {
	var (
		c                wfv1.Credential
		typ              string
		created, updated time.Time
		used             *time.Time
	)
	if err := row.Scan(&c.Name, &typ, &c.Fields, &c.Description, &c.Version, &c.KeyId, &created, &updated, &used); err != nil {
		return nil, err
	}
	c.Type = wfv1.CredentialType(wfv1.CredentialType_value[typ])
	c.CreateTime, c.UpdateTime = timestamppb.New(created), timestamppb.New(updated)
	if used != nil {
		c.LastUsedTime = timestamppb.New(*used)
	}
	return &c, nil
}

// CreateCredential seals and stores a new credential. A taken name is an
// error wrapping fault.ErrAlreadyExists.
func (s *Store) CreateCredential(ctx context.Context, kr *secrets.Keyring, nc NewCredential) (*wfv1.Credential, error) {
	sealed, fields, err := sealValues(kr, nc.Tenant, nc.Name, nc.Values)
	if err != nil {
		return nil, err
	}
	c, err := scanCredential(s.pool.QueryRow(ctx, `
		INSERT INTO credentials (tenant_id, name, type, fields, description, key_id, sealed)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING `+credentialColumns,
		nc.Tenant, nc.Name, nc.Type.String(), fields, nc.Description, kr.PrimaryID(), sealed))
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return nil, fmt.Errorf("credential %q: %w", nc.Name, fault.ErrAlreadyExists)
		}
		return nil, fmt.Errorf("create credential %q: %w", nc.Name, err)
	}
	return c, nil
}

// GetCredential returns a credential's metadata.
func (s *Store) GetCredential(ctx context.Context, tenant, name string) (*wfv1.Credential, error) {
	c, err := scanCredential(s.pool.QueryRow(ctx, `SELECT `+credentialColumns+`
		FROM credentials WHERE tenant_id = $1 AND name = $2`, tenant, name))
	if err != nil {
		return nil, notFound("credential", name, err)
	}
	return c, nil
}

// ListCredentials lists a tenant's credentials by name, after the name
// pageToken (empty: from the start).
func (s *Store) ListCredentials(ctx context.Context, tenant, pageToken string, limit int) ([]*wfv1.Credential, string, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+credentialColumns+`
		FROM credentials WHERE tenant_id = $1 AND name > $2 ORDER BY name LIMIT $3`,
		tenant, pageToken, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list credentials: %w", err)
	}
	defer rows.Close()
	var out []*wfv1.Credential
	for rows.Next() {
		c, err := scanCredential(rows)
		if err != nil {
			return nil, "", fmt.Errorf("scan credential: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list credentials: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[len(out)-1].Name
	}
	return out, next, nil
}

// RotateCredential replaces a credential's values and bumps its version.
func (s *Store) RotateCredential(ctx context.Context, kr *secrets.Keyring, tenant, name string, values map[string]string) (*wfv1.Credential, error) {
	sealed, fields, err := sealValues(kr, tenant, name, values)
	if err != nil {
		return nil, err
	}
	c, err := scanCredential(s.pool.QueryRow(ctx, `
		UPDATE credentials SET sealed = $3, fields = $4, key_id = $5, version = version + 1, updated_at = now()
		WHERE tenant_id = $1 AND name = $2
		RETURNING `+credentialColumns, tenant, name, sealed, fields, kr.PrimaryID()))
	if err != nil {
		return nil, notFound("credential", name, err)
	}
	return c, nil
}

// DeleteCredential deletes a credential.
func (s *Store) DeleteCredential(ctx context.Context, tenant, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM credentials WHERE tenant_id = $1 AND name = $2`, tenant, name)
	if err != nil {
		return fmt.Errorf("delete credential %q: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("credential %q: %w", name, fault.ErrNotFound)
	}
	return nil
}

// OpenCredential returns a credential with its values unsealed and records
// its use. A missing credential wraps fault.ErrNotFound; values sealed
// with a key the keyring lacks wrap secrets.ErrUnknownKey.
func (s *Store) OpenCredential(ctx context.Context, kr *secrets.Keyring, tenant, name string) (*OpenedCredential, error) {
	var (
		typ    string
		sealed []byte
		oc     = OpenedCredential{Name: name}
	)
	err := s.pool.QueryRow(ctx, `
		UPDATE credentials SET last_used_at = now() WHERE tenant_id = $1 AND name = $2
		RETURNING type, version, sealed`, tenant, name).Scan(&typ, &oc.Version, &sealed)
	if err != nil {
		return nil, notFound("credential", name, err)
	}
	raw, err := kr.Open(sealed, credentialAAD(tenant, name))
	if err != nil {
		return nil, fmt.Errorf("open credential %q: %w", name, err)
	}
	if err := json.Unmarshal(raw, &oc.Values); err != nil {
		return nil, fmt.Errorf("decode credential %q: %w", name, err)
	}
	oc.Type = wfv1.CredentialType(wfv1.CredentialType_value[typ])
	return &oc, nil
}

// ResealCredentials re-encrypts every credential not sealed with the
// keyring's primary key, so an old key can be retired once no queued run
// or saved profile still needs it. It returns how many were resealed.
func (s *Store) ResealCredentials(ctx context.Context, kr *secrets.Keyring) (int, error) {
	n := 0
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT tenant_id, name, sealed FROM credentials WHERE key_id <> $1 FOR UPDATE`, kr.PrimaryID())
		if err != nil {
			return err
		}
		type row struct {
			tenant, name string
			sealed       []byte
		}
		var todo []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.tenant, &r.name, &r.sealed); err != nil {
				rows.Close()
				return err
			}
			todo = append(todo, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range todo {
			aad := credentialAAD(r.tenant, r.name)
			raw, err := kr.Open(r.sealed, aad)
			if err != nil {
				return fmt.Errorf("credential %q of tenant %q: %w", r.name, r.tenant, err)
			}
			if _, err := tx.Exec(ctx, `UPDATE credentials SET sealed = $3, key_id = $4 WHERE tenant_id = $1 AND name = $2`,
				r.tenant, r.name, kr.Seal(raw, aad), kr.PrimaryID()); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reseal credentials: %w", err)
	}
	return n, nil
}
