package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errHelp ends a command after its usage was printed on request (-h).
var errHelp = errors.New("help requested")

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitWith ends a command with a code after its message was printed.
type exitWith struct {
	code int
	msg  string
}

func (e *exitWith) Error() string { return e.msg }

// fail prints err as one line on stderr and returns its exit code.
func (s *session) fail(ctx context.Context, err error) int {
	if errors.Is(err, errHelp) {
		return exitOK
	}
	code := exitUsage
	var ew *exitWith
	switch {
	case errors.As(err, &ew):
		code = ew.code
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled):
		code = exitInterrupt
	}
	line := s.prefix + ": " + s.describe(err)
	if s.apiKey != "" && len(s.apiKey) >= 4 {
		line = strings.ReplaceAll(line, s.apiKey, "[redacted]")
	}
	line = strings.ReplaceAll(line, "\n", " ")
	fmt.Fprintln(s.env.Stderr, line)
	return code
}

// describe renders an error for people: a gRPC status as its code, message
// and field violations, with a hint for the usual causes.
func (s *session) describe(err error) string {
	var ue *usageError
	var ew *exitWith
	if errors.As(err, &ue) || errors.As(err, &ew) {
		return err.Error()
	}
	st, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	msg := st.Code().String() + ": " + st.Message()
	for _, d := range st.Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue
		}
		for _, v := range br.GetFieldViolations() {
			fv := v.GetField() + ": " + v.GetDescription()
			if !strings.Contains(msg, fv) {
				msg += "; " + fv
			}
		}
	}
	switch st.Code() {
	case codes.Unauthenticated:
		if s.apiKey == "" {
			msg += " (the server requires an API key: set WAYFINDER_API_KEY)"
		} else {
			msg += " (check WAYFINDER_API_KEY / --api-key)"
		}
	case codes.Unavailable:
		msg = fmt.Sprintf("cannot reach the server at %s: %s (is it running? --addr / WAYFINDER_ADDR; --tls / --insecure)", s.addr, msg)
	case codes.DeadlineExceeded:
		msg += " (--timeout)"
	}
	return msg
}
