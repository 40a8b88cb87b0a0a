// Package trace finds a recorded element again on a live page: the
// element-fingerprint half of record and replay (issue 8).
//
// # Model
//
// A snapshot ref (@e7) is valid for one snapshot only, so a trace cannot
// store refs. When a run records an action it stores a [Fingerprint] of the
// target instead: what the snapshot says (role, accessible name, context,
// neighbours, box and the viewport it was seen in) plus what the DOM says
// ([browser.ElementDetails]: tag, stable attributes such as data-testid, a
// DOM path, the visible text). A fingerprint never holds a typed value,
// only the kind of value the element takes.
//
// On replay, [Match] scores every element of the live snapshot against the
// fingerprint. Each feature the fingerprint has contributes its weight ×
// a similarity in [0, 1]; the sum over the weights is then multiplied by a
// role factor (a different role weighs heavily against) and a value-kind
// factor. Identity attributes (test ids, hand-written ids, form names)
// weigh most, and only count fully when unique on the page; then the
// accessible name (exact, else word overlap and edit distance, case- and
// whitespace-insensitive); then text, context and neighbours, which tell
// identical controls in different rows apart; the DOM path, tag and box
// weigh least. The result is confident only when the best clears
// [ConfidentScore] and beats the runner-up by [ConfidentMargin], or is the
// only element carrying the recorded test id or id; and never when the
// runner-up differs from it only in position (two "Delete" buttons in two
// rows of the same name) — otherwise the caller
// should hand the step to the model (self-heal) rather than guess.
//
// A replay step costs one details read: [Shortlist] ranks the snapshot by
// its own features, the caller reads browser.Page.ElementDetails for those
// refs in one call, and Match scores with them.
//
// [PageSignature] identifies the kind of page a step expects: a URL
// pattern with record ids starred and a role skeleton (landmarks, headings
// by level, form controls), compared tolerantly by [Signature.Matches], so
// the same page with other data matches and a different page does not.
//
// The package is pure: no browser calls, no clock, no randomness; the same
// inputs give the same result.
package trace
