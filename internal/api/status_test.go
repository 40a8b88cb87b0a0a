package api

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wayfinder/wayfinder/internal/fault"
)

// TestToStatusDatabaseUnavailable: a database that cannot be reached is
// UNAVAILABLE (HTTP 503), never INTERNAL, and the driver's text (socket
// paths, hosts) stays in the log.
func TestToStatusDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	dial := &net.OpError{Op: "dial", Net: "unix", Addr: &net.UnixAddr{Name: "/secret/run/.s.PGSQL.5432"}, Err: os.ErrNotExist}
	cases := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"connection refused", fmt.Errorf("create run: insert: %w", dial), codes.Unavailable},
		{"admin shutdown", fmt.Errorf("load run: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}), codes.Unavailable},
		{"recovering", &pgconn.PgError{Code: "57P03", Message: "the database system is in recovery mode"}, codes.Unavailable},
		{"conn closed", fmt.Errorf("list runs: %w", pgconn.ErrConnClosed), codes.Unavailable},
		{"other database error", &pgconn.PgError{Code: "23505"}, codes.Internal},
		{"caller cancelled", fmt.Errorf("x: %w", context.Canceled), codes.Canceled},
		{"not found stays", fmt.Errorf("run: %w", fault.ErrNotFound), codes.NotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := toStatus(context.Background(), slog.New(slog.DiscardHandler), "/m", c.err)
			st, ok := status.FromError(err)
			require.True(t, ok)
			require.Equal(t, c.want, st.Code(), st.Message())
			require.NotContains(t, st.Message(), "/secret")
			require.NotContains(t, st.Message(), "PGSQL")
		})
	}
}
