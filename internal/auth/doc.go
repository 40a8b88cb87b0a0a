// Package auth applies a run's per-domain authentication in its browser
// context: the bindings of seed 000 §3.3 (Basic, Bearer, API key, OAuth
// client credentials, cookies, localStorage, login callbacks) and the
// global login callback.
//
// # Matching
//
// A Config's bindings are tried in order for a host and the first whose
// domain patterns match wins, for every request and page: a later "*"
// binding never adds its header to a host an earlier binding names, even
// when the earlier one is a cookie or form login. Patterns are those of the
// domain policy (package guard): "*", "example.com", "*.example.com" (the
// subdomains, not example.com itself: list both for both).
//
// # When each method applies
//
//   - Header methods (Basic HTTP header, Bearer, API key, OAuth) set their
//     header on every request to a matching host (pages, subresources,
//     fetches, popups), decided per request and per redirect hop, so a
//     redirect to another host never carries it. An OAuth token is
//     acquired the first time a request needs it (client-credentials
//     grant, RFC 6749 §4.4), cached until shortly before it expires and
//     acquired again after that.
//   - Cookies and localStorage entries are stored when the browser context
//     is created (and again in a context that replaces a crashed one);
//     localStorage is written from a document the browser serves itself,
//     so nothing reaches the site before the run's first navigation.
//   - Basic with the form-login strategy gives the model placeholders
//     ({{username}}, {{password}}) instead of values (runner.Secret).
//   - A login callback (a login script, or a webhook that gets a
//     short-lived CDP endpoint for the run's browser context) runs the first
//     time a page of a matching host has loaded, in every browser context,
//     and the page then goes back to where it was. The global callback runs
//     before the start URL opens.
//
// # Re-authentication
//
// A 401 or 403 answer to a top-level document of a host bound to any
// method but form login makes Auth re-apply the binding once (a new OAuth
// token, the callback again, cookies and storage stored again) and reload
// the page; a second 401 or 403 from that host ends the run with an
// authentication error.
//
// No secret value (password, token, key, cookie value, client secret,
// acquired token) appears in an error, a note, an event or a log line of
// this package.
package auth
