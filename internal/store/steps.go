package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// Media is a stored blob, usually a screenshot.
type Media struct {
	ID          string
	RunID       string
	StepNumber  int32
	ContentType string
	Data        []byte
	CreateTime  time.Time

	// objectKey is the object holding Data in the object store, once
	// stageMedia uploaded it; "": Data goes to Postgres.
	objectKey string
}

// RecordStep stores a finished step with its screenshot (when screenshot is
// not nil) and appends its STEP_FINISHED event, all in one transaction. The
// screenshot becomes the run's final screenshot. A step whose number is
// already recorded for the run is left as it is and recorded is false: a
// repeated delivery of the run never duplicates steps. A finished run takes
// no more steps (recorded is false): FINISHED is always its last event.
func (s *Store) RecordStep(ctx context.Context, step *wfv1.Step, screenshot *Media) (recorded bool, err error) {
	step = proto.Clone(step).(*wfv1.Step)
	screenshot = s.stageMedia(ctx, step.RunId, screenshot)
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		run, err := lockRun(ctx, tx, step.RunId)
		if err != nil || IsTerminal(run.Status) {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM steps WHERE run_id = $1 AND number = $2)`,
			step.RunId, step.Number).Scan(&exists); err != nil {
			return fmt.Errorf("check step: %w", err)
		}
		if exists {
			return nil
		}
		var mediaID *string
		if screenshot != nil {
			id, err := saveMedia(ctx, tx, step.RunId, step.Number, screenshot)
			if err != nil {
				return err
			}
			mediaID, step.ScreenshotMediaId = &id, id
		}
		record, err := protojson.Marshal(step)
		if err != nil {
			return fmt.Errorf("encode step: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO steps (run_id, number, started_at, ended_at, url, title, screenshot_media_id, record)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			step.RunId, step.Number, step.StartTime.AsTime(), step.EndTime.AsTime(), step.Url, step.Title, mediaID, record); err != nil {
			return fmt.Errorf("insert step: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE runs SET step_count = step_count + 1,
				final_screenshot_media_id = coalesce($2, final_screenshot_media_id),
				final_url = coalesce(NULLIF($3, ''), final_url)
			WHERE id = $1`, step.RunId, mediaID, step.Url); err != nil {
			return fmt.Errorf("update run after step: %w", err)
		}
		if _, err := appendEvent(ctx, tx, step.RunId, &wfv1.RunEvent{
			Type:    wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED,
			Status:  run.Status,
			Message: fmt.Sprintf("step %d finished", step.Number),
			Payload: &wfv1.RunEvent_Step{Step: step},
		}); err != nil {
			return err
		}
		recorded = true
		return nil
	})
	return recorded, err
}

// saveMedia stores m for the run unless the run already has media with the
// same content, and returns its ID. Media staged in the object store
// (stageMedia) keep their key and no bytes.
func saveMedia(ctx context.Context, tx pgx.Tx, runID string, step int32, m *Media) (string, error) {
	sum := sha256.Sum256(m.Data)
	var id string
	err := tx.QueryRow(ctx, `SELECT id::text FROM media WHERE run_id = $1 AND sha256 = $2 LIMIT 1`, runID, sum[:]).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("look up media: %w", err)
	}
	id = uuid.NewString()
	var stepNumber *int32
	if step > 0 {
		stepNumber = &step
	}
	data, key := m.Data, &m.objectKey
	if m.objectKey != "" {
		data = nil
	} else {
		key = nil
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO media (id, run_id, step_number, content_type, size_bytes, sha256, data, object_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		id, runID, stepNumber, m.ContentType, len(m.Data), sum[:], data, key); err != nil {
		return "", fmt.Errorf("insert media: %w", err)
	}
	return id, nil
}

// ListSteps returns up to limit steps of a run with numbers greater than
// afterNumber, in order. It returns an error wrapping fault.ErrNotFound when
// the run does not exist.
func (s *Store) ListSteps(ctx context.Context, runID string, afterNumber int32, limit int) ([]*wfv1.Step, error) {
	if _, err := getRun(ctx, s.pool, runID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT record FROM steps WHERE run_id = $1 AND number > $2 ORDER BY number LIMIT $3`,
		runID, afterNumber, limit)
	if err != nil {
		return nil, fmt.Errorf("list steps: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.Step, error) {
		var raw []byte
		if err := r.Scan(&raw); err != nil {
			return nil, err
		}
		step := &wfv1.Step{}
		if err := protojson.Unmarshal(raw, step); err != nil {
			return nil, fmt.Errorf("decode step: %w", err)
		}
		return step, nil
	})
}

// MediaRun returns the run a medium belongs to, without reading its bytes
// (which may sit in an object store): callers check who may read it first.
// An unknown ID wraps fault.ErrNotFound.
func (s *Store) MediaRun(ctx context.Context, id string) (string, error) {
	if !validUUID(id) {
		return "", fmt.Errorf("media %q: %w", id, errNotFound)
	}
	var runID string
	if err := s.pool.QueryRow(ctx, `SELECT run_id::text FROM media WHERE id = $1`, id).Scan(&runID); err != nil {
		return "", notFound("media", id, err)
	}
	return runID, nil
}

// GetMedia returns stored media by ID, or an error wrapping
// fault.ErrNotFound (also when its object is missing from the object
// store) or fault.ErrUnavailable (the object store cannot be read).
func (s *Store) GetMedia(ctx context.Context, id string) (*Media, error) {
	if !validUUID(id) {
		return nil, fmt.Errorf("media %q: %w", id, errNotFound)
	}
	m := &Media{ID: id}
	var step *int32
	var key *string
	err := s.pool.QueryRow(ctx, `
		SELECT run_id::text, step_number, content_type, data, object_key, created_at FROM media WHERE id = $1`, id).
		Scan(&m.RunID, &step, &m.ContentType, &m.Data, &key, &m.CreateTime)
	if err != nil {
		return nil, notFound("media", id, err)
	}
	if step != nil {
		m.StepNumber = *step
	}
	if m.Data == nil && key != nil {
		if m.Data, err = s.readObject(ctx, id, *key); err != nil {
			return nil, err
		}
	}
	return m, nil
}
