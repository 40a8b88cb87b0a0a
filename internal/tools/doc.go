// Package tools runs the custom tools a run carries: functions the caller
// defines by name, description and JSON Schemas, and implements behind an
// HTTPS webhook. The controller model sees them next to the browser actions
// (Set.Tools); when it calls one, Set.Call validates the arguments against
// the input schema, POSTs them to the webhook, and validates the answer
// against the output schema when there is one.
//
// Schemas are JSON Schema, draft 2020-12 unless they say otherwise with
// $schema. Only references inside the schema document resolve: a $ref to
// another document (https, file, or a relative path) is refused when the
// definition is validated, so compiling a caller's schema never reaches the
// network or the file system.
//
// Every failure of a call is an *Error with a Code the runner hands back to
// the model as a tool execution error; a failing webhook never ends a run.
// Webhook URLs and header values may carry secrets, so no Error message
// contains them: messages name the tool and the host, and text the webhook
// sent back has header values redacted.
//
// The package does not enforce the egress policy itself: the caller passes
// an *http.Client whose dialer does (Options.Client). Redirects are never
// followed, so a webhook cannot bounce a call (and its headers) elsewhere.
package tools
