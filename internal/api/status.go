package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

// errDatabaseUnavailable is what a caller is told when the database cannot
// be reached: the driver's own text names sockets and hosts.
var errDatabaseUnavailable = fmt.Errorf("the database is unavailable; retry the call: %w", fault.ErrUnavailable)

// statusTable is the one place that maps error kinds to gRPC codes (and,
// through grpc-gateway, to HTTP statuses). The first match wins.
var statusTable = []struct {
	kind error
	code codes.Code
}{
	{fault.ErrInvalidArgument, codes.InvalidArgument},
	{fault.ErrNotFound, codes.NotFound},
	{fault.ErrFailedPrecondition, codes.FailedPrecondition},
	{fault.ErrUnimplemented, codes.Unimplemented},
	{fault.ErrUnavailable, codes.Unavailable},
	{fault.ErrAlreadyExists, codes.AlreadyExists},
	{fault.ErrUnauthenticated, codes.Unauthenticated},
	{fault.ErrPermissionDenied, codes.PermissionDenied},
	{context.DeadlineExceeded, codes.DeadlineExceeded},
	{context.Canceled, codes.Canceled},
}

// toStatus converts an error returned by a handler into a gRPC status.
// Request errors carry a google.rpc.BadRequest detail with one violation per
// field. A database that cannot be reached (store.IsUnavailable) is
// UNAVAILABLE, so clients retry; the driver's text is logged, not returned.
// Errors of no known kind are internal: their text is logged, not returned,
// because it may describe the server's insides.
func toStatus(ctx context.Context, logger *slog.Logger, method string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if store.IsUnavailable(err) {
		logger.WarnContext(ctx, "database unavailable", "method", method, "error", err)
		err = errDatabaseUnavailable
	}
	for _, e := range statusTable {
		if !errors.Is(err, e.kind) {
			continue
		}
		st := status.New(e.code, err.Error())
		var reqErr *fault.RequestError
		if errors.As(err, &reqErr) {
			br := &errdetails.BadRequest{}
			for _, v := range reqErr.Violations {
				br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
					Field: v.Field, Description: v.Description,
				})
			}
			if withDetails, derr := st.WithDetails(br); derr == nil {
				st = withDetails
			}
		}
		return st.Err()
	}
	logger.ErrorContext(ctx, "request failed", "method", method, "error", err)
	return status.Error(codes.Internal, "internal error; the server log has the details")
}

// UnaryErrors converts handler errors to statuses for unary calls.
func UnaryErrors(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		return resp, toStatus(ctx, logger, info.FullMethod, err)
	}
}

// StreamErrors converts handler errors to statuses for streaming calls.
func StreamErrors(logger *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return toStatus(ss.Context(), logger, info.FullMethod, handler(srv, ss))
	}
}
