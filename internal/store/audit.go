package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// Audit event kinds.
const (
	AuditCredentialCreated = "credential.created"
	AuditCredentialRotated = "credential.rotated"
	AuditCredentialDeleted = "credential.deleted"
	AuditCredentialUsed    = "credential.used"
	AuditAPIKeyCreated     = "api_key.created"
	AuditAPIKeyRevoked     = "api_key.revoked"
	AuditTenantCreated     = "tenant.created"
	AuditTenantUpdated     = "tenant.updated"
	AuditPolicyBlocked     = "policy.blocked"
	AuditAuthFailed        = "auth.failed"
)

// Audit is one audit event to record. Details must hold no secret values.
type Audit struct {
	Tenant  string
	Kind    string
	Actor   string
	Subject string
	// RunID is the run the event belongs to; empty for none.
	RunID   string
	Details map[string]any
}

// RecordAudit appends an event to the tenant's audit log.
func (s *Store) RecordAudit(ctx context.Context, a Audit) error {
	details, err := json.Marshal(nonNilMap(a.Details))
	if err != nil {
		return fmt.Errorf("encode audit details: %w", err)
	}
	var runID *uuid.UUID
	if a.RunID != "" {
		id, err := uuid.Parse(a.RunID)
		if err != nil {
			return fmt.Errorf("audit run ID %q: %w", a.RunID, err)
		}
		runID = &id
	}
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO audit_events (tenant_id, kind, actor, subject, run_id, details)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		a.Tenant, a.Kind, a.Actor, a.Subject, runID, details); err != nil {
		return fmt.Errorf("record audit event: %w", err)
	}
	return nil
}

// AuditFilter selects audit events.
type AuditFilter struct {
	Tenant string
	// Kind and RunID, when set, keep only matching events.
	Kind, RunID string
	// PageSize is 1-500.
	PageSize int
	// PageToken continues a previous listing.
	PageToken string
}

// ListAudit lists a tenant's audit events newest first.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]*wfv1.AuditEvent, string, error) {
	before := int64(1<<63 - 1)
	if f.PageToken != "" {
		n, err := strconv.ParseInt(f.PageToken, 10, 64)
		if err != nil || n <= 0 {
			var v fault.Violations
			v.Add("page_token", "not a token from a previous response")
			return nil, "", v.Err()
		}
		before = n
	}
	var runID *uuid.UUID
	if f.RunID != "" {
		id, err := uuid.Parse(f.RunID)
		if err != nil {
			return nil, "", nil // no run has such an ID
		}
		runID = &id
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, created_at, kind, actor, subject, coalesce(run_id::text, ''), details
		FROM audit_events
		WHERE tenant_id = $1 AND id < $2 AND ($3 = '' OR kind = $3) AND ($4::uuid IS NULL OR run_id = $4)
		ORDER BY id DESC LIMIT $5`, f.Tenant, before, f.Kind, runID, f.PageSize+1)
	if err != nil {
		return nil, "", fmt.Errorf("list audit events: %w", err)
	}
	defer rows.Close()
	var out []*wfv1.AuditEvent
	for rows.Next() {
		var (
			ev      wfv1.AuditEvent
			at      time.Time
			details map[string]any
		)
		if err := rows.Scan(&ev.Id, &at, &ev.Kind, &ev.Actor, &ev.Subject, &ev.RunId, &details); err != nil {
			return nil, "", fmt.Errorf("scan audit event: %w", err)
		}
		ev.Time = timestamppb.New(at)
		if ev.Details, err = structpb.NewStruct(details); err != nil {
			return nil, "", fmt.Errorf("audit details: %w", err)
		}
		out = append(out, &ev)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list audit events: %w", err)
	}
	next := ""
	if len(out) > f.PageSize {
		out = out[:f.PageSize]
		next = strconv.FormatInt(out[len(out)-1].Id, 10)
	}
	return out, next, nil
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
