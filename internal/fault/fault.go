// Package fault is Wayfinder's small vocabulary of error kinds. Packages wrap
// one of these sentinels (with %w) or return a *RequestError, and the API edge
// maps them to gRPC codes in exactly one table (see internal/api). Handlers
// never invent status codes.
package fault

import (
	"errors"
	"fmt"
	"strings"
)

// The error kinds callers branch on.
var (
	// ErrNotFound: the named resource does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidArgument: the request is malformed or out of range.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrFailedPrecondition: the request is valid but the resource is not in
	// a state that allows it.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnimplemented: the request uses a capability this server does not
	// have (yet).
	ErrUnimplemented = errors.New("unimplemented")
	// ErrUnavailable: a dependency (database, browser pool) is temporarily
	// unavailable; the call may be retried.
	ErrUnavailable = errors.New("unavailable")
	// ErrAlreadyExists: the resource to create exists already.
	ErrAlreadyExists = errors.New("already exists")
	// ErrUnauthenticated: the request carries no valid API key.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: the caller's key may not make this call.
	ErrPermissionDenied = errors.New("permission denied")
)

// FieldViolation names one offending request field.
type FieldViolation struct {
	// Field is the path of the field, e.g. "params.start_url".
	Field string
	// Description says what is wrong, for a human.
	Description string
}

// RequestError is a rejected request with one violation per offending field.
// Kind is ErrInvalidArgument or ErrUnimplemented.
type RequestError struct {
	Kind       error
	Violations []FieldViolation
}

// Error joins the violations into one message.
func (e *RequestError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.Field + ": " + v.Description
	}
	return strings.Join(parts, "; ")
}

// Unwrap lets errors.Is(err, ErrInvalidArgument) and friends work.
func (e *RequestError) Unwrap() error { return e.Kind }

// Violations collects field violations while a request is validated.
// The zero value is ready to use.
type Violations struct {
	invalid       []FieldViolation
	unimplemented []FieldViolation
}

// Add records an invalid field.
func (v *Violations) Add(field, format string, args ...any) {
	v.invalid = append(v.invalid, FieldViolation{Field: field, Description: fmt.Sprintf(format, args...)})
}

// Unimplemented records a field this server does not support yet.
func (v *Violations) Unimplemented(field, format string, args ...any) {
	v.unimplemented = append(v.unimplemented, FieldViolation{Field: field, Description: fmt.Sprintf(format, args...)})
}

// Err returns nil when nothing was recorded. Invalid fields take precedence:
// a request that is both invalid and uses unimplemented fields is reported
// as invalid, listing only the invalid fields.
func (v *Violations) Err() error {
	switch {
	case len(v.invalid) > 0:
		return &RequestError{Kind: ErrInvalidArgument, Violations: v.invalid}
	case len(v.unimplemented) > 0:
		return &RequestError{Kind: ErrUnimplemented, Violations: v.unimplemented}
	}
	return nil
}
