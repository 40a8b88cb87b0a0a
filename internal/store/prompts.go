package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// The prompt library (PromptService): a tenant's named prompts, each a
// list of immutable versions numbered from 1.

// promptRoles maps prompt roles to their stored form.
var promptRoles = map[wfv1.PromptRole]string{
	wfv1.PromptRole_PROMPT_ROLE_CONTROLLER: "controller",
	wfv1.PromptRole_PROMPT_ROLE_JUDGE:      "judge",
}

// lockPromptName serializes, within tx, the creations and the deletion of
// one tenant's prompt name: version numbers are then handed out one at a
// time, and a delete sees every version committed before it.
func lockPromptName(ctx context.Context, tx pgx.Tx, tenant, name string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('prompt:' || $1 || ':' || $2, 0))`, tenant, name); err != nil {
		return fmt.Errorf("lock prompt %q: %w", name, err)
	}
	return nil
}

// CreatePrompt stores p (validated by the caller; its version and create
// time are ignored) as the next version of the tenant's prompt p.Name,
// version 1 for a new name, and returns it as stored. A role other than
// the name's earlier versions' is an error wrapping
// fault.ErrFailedPrecondition; an unknown tenant one wrapping
// fault.ErrNotFound.
func (s *Store) CreatePrompt(ctx context.Context, tenant string, p *wfv1.Prompt) (*wfv1.Prompt, error) {
	role, ok := promptRoles[p.GetRole()]
	if !ok {
		return nil, fmt.Errorf("prompt %q: unknown role %v: %w", p.GetName(), p.GetRole(), fault.ErrInvalidArgument)
	}
	defaults := []byte("{}")
	if p.GetDefaults() != nil {
		var err error
		if defaults, err = protojson.Marshal(p.GetDefaults()); err != nil {
			return nil, fmt.Errorf("encode prompt defaults: %w", err)
		}
	}
	var (
		version int32
		at      time.Time
	)
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockPromptName(ctx, tx, tenant, p.GetName()); err != nil {
			return err
		}
		var last string
		err := tx.QueryRow(ctx, `SELECT role FROM prompts WHERE tenant_id = $1 AND name = $2 ORDER BY version DESC LIMIT 1`,
			tenant, p.GetName()).Scan(&last)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("load prompt %q: %w", p.GetName(), err)
		case last != role:
			return fmt.Errorf("%w: prompt %q is a %s prompt; a new version must keep its role (create a prompt of another name)",
				fault.ErrFailedPrecondition, p.GetName(), last)
		}
		return tx.QueryRow(ctx, `
			INSERT INTO prompts (tenant_id, name, version, role, template, description, defaults, created_by)
			SELECT $1, $2, coalesce(max(version), 0) + 1, $3, $4, $5, $6, $7
			FROM prompts WHERE tenant_id = $1 AND name = $2
			RETURNING version, created_at`,
			tenant, p.GetName(), role, p.GetTemplate(), p.GetDescription(), defaults, p.GetCreatedBy()).Scan(&version, &at)
	})
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23503":
		return nil, fmt.Errorf("tenant %q: %w", tenant, errNotFound)
	case err != nil:
		if errors.Is(err, fault.ErrFailedPrecondition) {
			return nil, err
		}
		return nil, fmt.Errorf("store prompt %q: %w", p.GetName(), err)
	}
	return &wfv1.Prompt{
		Name: p.GetName(), Version: version, Role: p.GetRole(), Template: p.GetTemplate(),
		Description: p.GetDescription(), Defaults: p.GetDefaults(), CreateTime: timestamppb.New(at),
		CreatedBy: p.GetCreatedBy(),
	}, nil
}

const promptColumns = `name, version, role, template, description, defaults, created_at, created_by`

// GetPrompt returns a version of the tenant's prompt name, the latest when
// version is 0, or an error wrapping fault.ErrNotFound.
func (s *Store) GetPrompt(ctx context.Context, tenant, name string, version int32) (*wfv1.Prompt, error) {
	row := s.pool.QueryRow(ctx, `SELECT `+promptColumns+` FROM prompts
		WHERE tenant_id = $1 AND name = $2 AND ($3 = 0 OR version = $3)
		ORDER BY version DESC LIMIT 1`, tenant, name, version)
	p, err := scanPrompt(row)
	if err != nil {
		ref := name
		if version > 0 {
			ref += "@" + strconv.Itoa(int(version))
		}
		return nil, notFound("prompt", ref, err)
	}
	return p, nil
}

// ListPrompts returns the latest version of up to limit of the tenant's
// prompts by name, after the page token, and the next page's token (""
// on the last page).
func (s *Store) ListPrompts(ctx context.Context, tenant, pageToken string, limit int) ([]*wfv1.Prompt, string, error) {
	after := ""
	if pageToken != "" {
		var err error
		if after, err = decodePromptToken(pageToken); err != nil {
			return nil, "", err
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (name) `+promptColumns+` FROM prompts
		WHERE tenant_id = $1 AND name > $2
		ORDER BY name, version DESC
		LIMIT $3`, tenant, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list prompts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.Prompt, error) { return scanPrompt(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list prompts: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodePromptToken(out[len(out)-1].Name)
	}
	return out, next, nil
}

// ListPromptVersions returns up to limit versions of the tenant's prompt
// name, newest first, after the page token, and the next page's token.
// A name without versions is an error wrapping fault.ErrNotFound.
func (s *Store) ListPromptVersions(ctx context.Context, tenant, name, pageToken string, limit int) ([]*wfv1.Prompt, string, error) {
	before := int64(1) << 31
	if pageToken != "" {
		after, err := decodePromptToken(pageToken)
		if err == nil {
			before, err = strconv.ParseInt(after, 10, 32)
		}
		if err != nil {
			return nil, "", malformedPromptToken()
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT `+promptColumns+` FROM prompts
		WHERE tenant_id = $1 AND name = $2 AND version < $3::int8
		ORDER BY version DESC
		LIMIT $4`, tenant, name, before, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list prompt versions: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.Prompt, error) { return scanPrompt(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list prompt versions: %w", err)
	}
	if len(out) == 0 && pageToken == "" {
		return nil, "", fmt.Errorf("prompt %q: %w", name, errNotFound)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodePromptToken(strconv.Itoa(int(out[len(out)-1].Version)))
	}
	return out, next, nil
}

// DeletePrompt deletes every version of the tenant's prompt name. While a
// run of the tenant that has not finished references it (its params name
// it, or it pinned one of its versions) the error wraps
// fault.ErrFailedPrecondition; a name without versions is an error
// wrapping fault.ErrNotFound.
func (s *Store) DeletePrompt(ctx context.Context, tenant, name string) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		// Concurrent creations of a version wait for the delete. A run
		// created meanwhile that names the prompt ends ERROR when it starts.
		if err := lockPromptName(ctx, tx, tenant, name); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM prompts WHERE tenant_id = $1 AND name = $2`,
			tenant, name).Scan(&n); err != nil {
			return fmt.Errorf("delete prompt %q: %w", name, err)
		}
		if n == 0 {
			return fmt.Errorf("prompt %q: %w", name, errNotFound)
		}
		var busy []string
		rows, err := tx.Query(ctx, `
			SELECT id::text FROM runs
			WHERE tenant_id = $1 AND status IN ('queued', 'running', 'awaiting_approval')
			  AND EXISTS (SELECT 1 FROM unnest(ARRAY[
			        params->'controller'->>'promptRef', params->'judge'->'model'->>'promptRef',
			        prompt_pins->>'controller', prompt_pins->>'judge']) AS r(ref)
			      WHERE split_part(r.ref, '@', 1) = $2)
			ORDER BY created_at LIMIT 3`, tenant, name)
		if err != nil {
			return fmt.Errorf("delete prompt %q: %w", name, err)
		}
		if busy, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return fmt.Errorf("delete prompt %q: %w", name, err)
		}
		if len(busy) > 0 {
			return fmt.Errorf("%w: prompt %q is referenced by runs that have not finished (%v); cancel them or wait",
				fault.ErrFailedPrecondition, name, busy)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM prompts WHERE tenant_id = $1 AND name = $2`, tenant, name); err != nil {
			return fmt.Errorf("delete prompt %q: %w", name, err)
		}
		return nil
	})
}

// PinRunPrompts records the prompt versions ("name@version" by role) a
// run's references resolved to, keeping any pinned before (a resumed
// run's), and returns the run's pins as stored.
func (s *Store) PinRunPrompts(ctx context.Context, runID string, pins map[string]string) (map[string]string, error) {
	if pins == nil {
		pins = map[string]string{} // not JSON null, which || would make an array
	}
	raw, err := json.Marshal(pins)
	if err != nil {
		return nil, fmt.Errorf("encode prompt pins: %w", err)
	}
	var stored []byte
	// jsonb || keeps the right operand's value of a key both hold: earlier
	// pins win.
	err = s.pool.QueryRow(ctx, `UPDATE runs SET prompt_pins = $2::jsonb || prompt_pins WHERE id = $1 RETURNING prompt_pins`,
		runID, raw).Scan(&stored)
	if err != nil {
		return nil, notFound("run", runID, err)
	}
	out := map[string]string{}
	if err := json.Unmarshal(stored, &out); err != nil {
		return nil, fmt.Errorf("decode prompt pins of run %s: %w", runID, err)
	}
	return out, nil
}

func scanPrompt(row pgx.Row) (*wfv1.Prompt, error) {
	var (
		p        wfv1.Prompt
		role     string
		defaults []byte
		at       time.Time
	)
	if err := row.Scan(&p.Name, &p.Version, &role, &p.Template, &p.Description, &defaults, &at, &p.CreatedBy); err != nil {
		return nil, err
	}
	for r, name := range promptRoles {
		if name == role {
			p.Role = r
		}
	}
	if string(defaults) != "{}" {
		p.Defaults = &wfv1.ModelSettings{}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(defaults, p.Defaults); err != nil {
			return nil, fmt.Errorf("decode defaults of prompt %q: %w", p.Name, err)
		}
	}
	p.CreateTime = timestamppb.New(at)
	return &p, nil
}

// A page token of the prompt lists: the last name (or version) listed.
const promptTokenPrefix = "p:"

func encodePromptToken(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(promptTokenPrefix + last))
}

func decodePromptToken(token string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !strings.HasPrefix(string(b), promptTokenPrefix) {
		return "", malformedPromptToken()
	}
	return strings.TrimPrefix(string(b), promptTokenPrefix), nil
}

func malformedPromptToken() error {
	return &fault.RequestError{Kind: fault.ErrInvalidArgument, Violations: []fault.FieldViolation{
		{Field: "page_token", Description: "malformed page token; pass next_page_token from a previous response"},
	}}
}
