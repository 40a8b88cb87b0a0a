package tools

import "fmt"

// Error codes of a failed call.
const (
	// CodeUnknownTool: no tool of that name in the set.
	CodeUnknownTool = "unknown_tool"
	// CodeInvalidArguments: the arguments are not JSON or do not match the
	// input schema; the webhook was not called.
	CodeInvalidArguments = "invalid_arguments"
	// CodeTimeout: the webhook did not answer within its timeout.
	CodeTimeout = "timeout"
	// CodeUnreachable: the request could not be sent or the answer could
	// not be read (DNS, connection, TLS, egress policy).
	CodeUnreachable = "unreachable"
	// CodeHTTPError: the webhook answered with a status other than 2xx.
	CodeHTTPError = "http_error"
	// CodeInvalidOutput: the answer is not JSON, is too large or does not
	// match the output schema.
	CodeInvalidOutput = "invalid_output"
)

// Error is a failed tool call. Message is safe to show to the model and to
// record: it never contains the webhook's URL or header values.
type Error struct {
	// Code is one of the Code* constants.
	Code string
	// Message says what went wrong.
	Message string
	// Status is the webhook's HTTP status, 0 when there was no answer.
	Status int
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}
