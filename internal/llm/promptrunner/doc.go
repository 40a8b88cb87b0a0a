// Package promptrunner is the prompt-runner webhook: a Model that sends
// every prompt to the host's URL and uses its answer, so a host can route
// all of a run's prompts (controller and judge) through its own model
// infrastructure, logging and billing. The full contract, with examples, is
// docs/prompt-runner.md.
//
// # Contract, version 1
//
// Each model call is one POST of a JSON body to the configured URL, with
// Content-Type: application/json, User-Agent: wayfinder and the run's
// configured headers:
//
//	{
//	  "version": 1,
//	  "run_id": "…",              // "" when the caller did not say
//	  "role": "controller",       // or "judge"; "" when the caller did not say
//	  "step": 3,                  // the run's step number, 0 when not in a step
//	  "model": "…",               // the run's model hint, "" when none
//	  "system": "…",
//	  "messages": [{"role": "user" | "assistant", "parts": [
//	    {"text": "…"},
//	    {"image": {"media_type": "image/png", "data": "<base64>"}},
//	    {"tool_call": {"id": "…", "name": "…", "arguments": {…}}},
//	    {"tool_result": {"call_id": "…", "name": "…", "content": "…", "is_error": false,
//	                     "images": [{"media_type": "image/jpeg", "data": "<base64>"}]}}
//	  ]}],
//	  "tools": [{"name": "…", "description": "…", "input_schema": {…}}],
//	  "tool_choice": "auto" | "any" | "none",
//	  "temperature": 0.2,         // omitted when unset
//	  "max_output_tokens": 4096   // omitted when unset
//	}
//
// Each part has exactly one key. Tool results travel in user messages; a
// tool call's arguments are a JSON object. The host answers 200 with:
//
//	{
//	  "text": "…",
//	  "tool_calls": [{"id": "…", "name": "…", "arguments": {…}}],
//	  "usage": {"input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0},
//	  "model": "…",
//	  "stop_reason": "…"
//	}
//
// Every response field is optional, but an answer needs text or a tool
// call. A tool call's id is generated when missing; its arguments may also
// be a JSON string holding the object (as OpenAI sends them). "version",
// when present, must be 1. Unknown fields are ignored in both directions, so
// later versions can add fields.
//
// Errors are classified by status: 401 and 403 are ErrAuth, 429 is
// ErrRateLimited (honouring Retry-After), 408 and 5xx are ErrTransient, a
// redirect and any other 4xx are ErrInvalidRequest (redirects are not
// followed: they would carry the run's headers elsewhere). Network errors
// and timeouts are ErrTransient. An answer that is not the JSON above, or
// larger than 8 MiB, is ErrUnparseable; an answer with neither text nor tool
// calls is ErrRefused. Errors never contain header values or the URL's path
// and query, which may hold secrets.
package promptrunner
