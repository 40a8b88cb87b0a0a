package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SaveMedia stores m for step step of run runID (0: no step) and returns
// its ID. The run's media are stored once per content: saving the same
// bytes again returns the existing ID.
func (s *Store) SaveMedia(ctx context.Context, runID string, step int32, m *Media) (string, error) {
	var id string
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		id, err = saveMedia(ctx, tx, runID, step, m)
		return err
	})
	return id, err
}
