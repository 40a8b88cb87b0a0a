package store

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// PromptRun is a model call to record.
type PromptRun struct {
	RunID    string
	Step     int32
	Role     string
	Provider string
	Model    string
	// Request is the request as JSON, naming each image by a reference
	// string (Images[i].Ref) instead of its bytes; Response is the answer
	// as JSON, nil when the call failed.
	Request  []byte
	Response []byte
	Usage    *wfv1.Usage
	Start    time.Time
	End      time.Time
	Error    string
	// PromptRef is the prompt library version ("name@version") the
	// call's system prompt came from; "" for none.
	PromptRef string
	// Images are the images the model saw, in order. Each is stored once
	// per run as media, and its Ref in Request is replaced by the media ID.
	Images []PromptImage
}

// PromptImage is an image of a prompt run.
type PromptImage struct {
	Ref   string
	Media Media
}

// RecordPromptRun stores a model call with its images and adds its usage to
// the run's totals, in one transaction, and returns its ID.
func (s *Store) RecordPromptRun(ctx context.Context, pr PromptRun) (string, error) {
	id := uuid.NewString()
	usage := pr.Usage
	if usage == nil {
		usage = &wfv1.Usage{}
	}
	// Images go to the object store before the transaction: no network
	// I/O in it.
	images := make([]*Media, len(pr.Images))
	for i := range pr.Images {
		images[i] = s.stageMedia(ctx, pr.RunID, &pr.Images[i].Media)
	}
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		request := pr.Request
		mediaIDs := make([]string, 0, len(pr.Images))
		for i, img := range pr.Images {
			mid, err := saveMedia(ctx, tx, pr.RunID, pr.Step, images[i])
			if err != nil {
				return err
			}
			mediaIDs = append(mediaIDs, mid)
			if img.Ref != "" {
				request = bytes.ReplaceAll(request, []byte(`"`+img.Ref+`"`), []byte(`"`+mid+`"`))
			}
		}
		var response any
		if pr.Response != nil {
			response = pr.Response
		}
		var errText *string
		if pr.Error != "" {
			errText = &pr.Error
		}
		var step *int32
		if pr.Step > 0 {
			step = &pr.Step
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO prompt_runs (id, run_id, step_number, role, provider, model, request, response,
				input_tokens, output_tokens, cached_input_tokens, cost_usd, started_at, ended_at, error, prompt_ref)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
			id, pr.RunID, step, pr.Role, pr.Provider, pr.Model, request, response,
			usage.InputTokens, usage.OutputTokens, usage.CachedInputTokens, usage.CostUsd, pr.Start, pr.End, errText,
			pr.PromptRef); err != nil {
			return fmt.Errorf("insert prompt run: %w", err)
		}
		for i, mid := range mediaIDs {
			if _, err := tx.Exec(ctx, `
				INSERT INTO prompt_run_media (prompt_run_id, media_id, position) VALUES ($1, $2, $3)`,
				id, mid, i); err != nil {
				return fmt.Errorf("insert prompt run media: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `
			UPDATE runs SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3,
				cached_input_tokens = cached_input_tokens + $4, cost_usd = cost_usd + $5,
				model_calls = model_calls + 1
			WHERE id = $1`, pr.RunID, usage.InputTokens, usage.OutputTokens, usage.CachedInputTokens, usage.CostUsd); err != nil {
			return fmt.Errorf("add usage to run: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// ListPromptRuns returns up to limit prompt runs of a run in the order they
// started, after the page token, and the next page's token ("" on the last
// page). It returns an error wrapping fault.ErrNotFound when the run does
// not exist.
func (s *Store) ListPromptRuns(ctx context.Context, runID string, pageToken string, limit int) ([]*wfv1.PromptRun, string, error) {
	if _, err := getRun(ctx, s.pool, runID); err != nil {
		return nil, "", err
	}
	var afterTime *time.Time
	var afterID *string
	if pageToken != "" {
		cur, err := decodeCursor(pageToken)
		if err != nil {
			return nil, "", err
		}
		afterTime, afterID = &cur.Created, &cur.ID
	}
	rows, err := s.pool.Query(ctx, `
		SELECT p.id::text, coalesce(p.step_number, 0), p.role, p.provider, p.model, p.request, p.response,
			p.input_tokens, p.output_tokens, p.cached_input_tokens, p.cost_usd::float8, p.started_at,
			coalesce(p.ended_at, p.started_at), coalesce(p.error, ''),
			coalesce((SELECT array_agg(m.media_id::text ORDER BY m.position) FROM prompt_run_media m
			          WHERE m.prompt_run_id = p.id), '{}'), p.prompt_ref
		FROM prompt_runs p
		WHERE p.run_id = $1 AND ($2::timestamptz IS NULL OR (p.started_at, p.id) > ($2, $3::uuid))
		ORDER BY p.started_at, p.id
		LIMIT $4`, runID, afterTime, afterID, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("list prompt runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.PromptRun, error) {
		pr := &wfv1.PromptRun{RunId: runID, Usage: &wfv1.Usage{ModelCalls: 1}}
		var request, response []byte
		var start, end time.Time
		if err := r.Scan(&pr.Id, &pr.StepNumber, &pr.Role, &pr.Provider, &pr.Model, &request, &response,
			&pr.Usage.InputTokens, &pr.Usage.OutputTokens, &pr.Usage.CachedInputTokens, &pr.Usage.CostUsd,
			&start, &end, &pr.Error, &pr.MediaIds, &pr.PromptRef); err != nil {
			return nil, err
		}
		pr.StartTime, pr.Latency = timestamppb.New(start), durationpb.New(end.Sub(start))
		var err error
		if pr.Request, err = jsonStruct(request); err != nil {
			return nil, fmt.Errorf("decode prompt run request: %w", err)
		}
		if response != nil {
			if pr.Response, err = jsonStruct(response); err != nil {
				return nil, fmt.Errorf("decode prompt run response: %w", err)
			}
		}
		return pr, nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("list prompt runs: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[len(out)-1]
		next = encodeCursor(pageCursor{Created: last.StartTime.AsTime(), ID: last.Id})
	}
	return out, next, nil
}

func jsonStruct(raw []byte) (*structpb.Struct, error) {
	st := &structpb.Struct{}
	if err := st.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return st, nil
}
