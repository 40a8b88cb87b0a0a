package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// A tenant's own site profiles (SiteProfileService). The server's profiles
// come from a directory (governance.LoadProfiles), not from here.

// PutSiteProfile creates or replaces the tenant's profile for p's domain
// (which the caller has validated and normalised) and returns it as
// stored, with source "tenant" and its update time. An unknown tenant is
// an error wrapping fault.ErrNotFound.
func (s *Store) PutSiteProfile(ctx context.Context, tenant string, p *wfv1.SiteProfile) (*wfv1.SiteProfile, error) {
	stored := proto.Clone(p).(*wfv1.SiteProfile)
	stored.Source, stored.UpdateTime = "", nil
	raw, err := protojson.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("encode site profile: %w", err)
	}
	var at time.Time
	err = s.pool.QueryRow(ctx, `
		INSERT INTO site_profiles (tenant_id, domain, profile) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id, domain) DO UPDATE SET profile = excluded.profile, updated_at = now()
		RETURNING updated_at`, tenant, stored.Domain, raw).Scan(&at)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" {
			return nil, fmt.Errorf("tenant %q: %w", tenant, errNotFound)
		}
		return nil, fmt.Errorf("store site profile %q: %w", stored.Domain, err)
	}
	stored.Source, stored.UpdateTime = "tenant", timestamppb.New(at)
	return stored, nil
}

// GetSiteProfile returns the tenant's own profile for exactly the domain
// pattern domain, or an error wrapping fault.ErrNotFound.
func (s *Store) GetSiteProfile(ctx context.Context, tenant, domain string) (*wfv1.SiteProfile, error) {
	var (
		raw []byte
		at  time.Time
	)
	err := s.pool.QueryRow(ctx, `SELECT profile, updated_at FROM site_profiles WHERE tenant_id = $1 AND domain = $2`,
		tenant, domain).Scan(&raw, &at)
	if err != nil {
		return nil, notFound("site profile", domain, err)
	}
	return decodeSiteProfile(raw, at)
}

// ListSiteProfiles returns the tenant's own profiles ordered by domain.
func (s *Store) ListSiteProfiles(ctx context.Context, tenant string) ([]*wfv1.SiteProfile, error) {
	rows, err := s.pool.Query(ctx, `SELECT profile, updated_at FROM site_profiles WHERE tenant_id = $1 ORDER BY domain`, tenant)
	if err != nil {
		return nil, fmt.Errorf("list site profiles: %w", err)
	}
	defer rows.Close()
	var out []*wfv1.SiteProfile
	for rows.Next() {
		var (
			raw []byte
			at  time.Time
		)
		if err := rows.Scan(&raw, &at); err != nil {
			return nil, fmt.Errorf("scan site profile: %w", err)
		}
		p, err := decodeSiteProfile(raw, at)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list site profiles: %w", err)
	}
	return out, nil
}

// DeleteSiteProfile deletes the tenant's own profile for domain; none is
// an error wrapping fault.ErrNotFound.
func (s *Store) DeleteSiteProfile(ctx context.Context, tenant, domain string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM site_profiles WHERE tenant_id = $1 AND domain = $2`, tenant, domain)
	if err != nil {
		return fmt.Errorf("delete site profile %q: %w", domain, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("site profile %q: %w", domain, errNotFound)
	}
	return nil
}

func decodeSiteProfile(raw []byte, at time.Time) (*wfv1.SiteProfile, error) {
	p := &wfv1.SiteProfile{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("decode site profile: %w", err)
	}
	p.Source, p.UpdateTime = "tenant", timestamppb.New(at)
	return p, nil
}
