package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	opErr := &net.OpError{Op: "dial", Net: "unix", Err: os.ErrNotExist}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("boom"), false},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, true},
		{"starting up", fmt.Errorf("load run: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"network", fmt.Errorf("insert run: %w", opErr), true},
		{"conn closed", fmt.Errorf("x: %w", pgconn.ErrConnClosed), true},
		{"unexpected EOF", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), true},
		{"caller cancelled", fmt.Errorf("x: %w", context.Canceled), false},
		{"caller deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, IsUnavailable(c.err))
		})
	}
}

// TestIsUnavailableRealPool checks the errors pgx really returns when no
// Postgres listens: the pool's acquisition fails with a connect error.
func TestIsUnavailableRealPool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := pgxpool.ParseConfig("postgres://nobody@/wayfinder?host=" + filepath.Join(dir, "gone") + "&connect_timeout=5")
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = pool.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	require.True(t, IsUnavailable(err), "%v", err)
	s := New(pool)
	err = s.Ping(ctx)
	require.True(t, IsUnavailable(fmt.Errorf("ping: %w", err)), "%v", err)
}
