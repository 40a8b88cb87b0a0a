package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// IsUnavailable reports whether err says that the database could not be
// reached or dropped the connection: a failed connect (which is what a pool
// acquisition fails with while Postgres is down), a connection lost mid-call,
// or Postgres refusing work because it is shutting down, starting up or
// recovering from a crash. Such a call may be retried once the database is
// back. Context cancellation and deadlines are not unavailability (they are
// the caller's own limits), nor is any other error Postgres answers with.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableState(pgErr.Code)
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF)
}

// unavailableState reports whether a SQLSTATE means the server cannot serve
// right now: class 08 (connection exception), 57P01 admin_shutdown, 57P02
// crash_shutdown, 57P03 cannot_connect_now and 53300 too_many_connections.
func unavailableState(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "53300":
		return true
	}
	return strings.HasPrefix(code, "08")
}
