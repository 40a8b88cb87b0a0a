// Package webhook POSTs runs' results to the webhook their params name,
// signed, retried and recorded.
//
// A run that names a webhook (RunParams.webhook) gets one delivery when it
// ends, whatever ended it (its worker, a cancellation while queued, the
// reaper of lost runs), and one per approval request when the webhook asks
// for them (on_approval). The Dispatcher finds these events in the run
// event log — woken by the store's NOTIFY the moment the event commits, and
// on a timer as a safety net — and records each delivery (the exact body)
// together with its River job in one transaction. An event has one original
// delivery even when the dispatchers of several replicas race for it.
//
// The Worker (a River worker of queue.WebhookArgs) POSTs the body through
// the server's egress client with three headers:
//
//	Webhook-Id:        the delivery's ID
//	Webhook-Timestamp: the time of this attempt, unix seconds
//	Webhook-Signature: v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//
// Any 2xx answer delivers it; anything else (another status, no answer in
// 15s, a refused connection) is retried on the schedule of RetryDelay (or
// later when a 429 or 503 says Retry-After, up to MaxRetryAfter), at
// most queue.WebhookMaxAttempts times over about an hour, and every attempt
// is recorded on the delivery (attempts, last status and error, state).
// Redirects are not followed. The secret is never stored with the
// delivery: the worker opens it from the run's sealed params at send time,
// so each attempt (and each redelivery) is signed afresh. Receivers check
// signatures with Verify, or the few lines it documents.
package webhook
