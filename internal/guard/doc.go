// Package guard implements the domain policy of a Wayfinder browser run.
//
// Every run carries a list of allowed and a list of blocked domain patterns.
// This package is the single implementation of what those lists mean: the
// API uses [ValidatePattern] and [New] to validate them, the worker calls
// [Policy.Check] to refuse a start URL before navigating, and a network-layer
// interceptor calls [Policy.Check] or [Policy.CheckURL] for every request.
//
// # Patterns
//
// A pattern is one of:
//
//   - "*": matches every host.
//   - "example.com": matches exactly the host example.com.
//   - "*.example.com": matches any subdomain of example.com at any depth
//     (www.example.com, a.b.example.com) but NOT example.com itself. To
//     allow a site and its subdomains, list both "example.com" and
//     "*.example.com". Keeping the apex separate means a pattern never
//     grants more than it literally says, and blocking "*.example.com"
//     does not silently block the apex.
//   - An IP literal: "127.0.0.1", "::1" or "[::1]". IPv4-mapped IPv6
//     addresses are treated as the IPv4 address they map.
//   - "localhost".
//
// Patterns are case-insensitive, a single trailing dot is ignored
// ("example.com." is "example.com") and internationalised names are
// compared in their punycode (A-label) form, so "bücher.de" and
// "xn--bcher-kva.de" are the same pattern. Patterns never contain a
// scheme, a path, a port, a "*" anywhere but as the whole leading label,
// or "**"; [ValidatePattern] explains what is wrong with a rejected one.
//
// # Checking a URL
//
// [Policy.Check] applies these rules in order; the first that refuses the
// URL determines the [Reason] of the returned [*BlockedError]:
//
//  1. Scheme: only http and https URLs may be visited ([ReasonScheme]).
//     The one exception is "about:blank", which is always allowed because
//     browsers start there. javascript:, file:, ftp:, data:, blob: and
//     every other scheme are refused.
//  2. Host: a URL without a valid host is refused ([ReasonInvalid]).
//     Hosts are normalised like patterns; the port never takes part in
//     matching. Numeric hosts that browsers interpret as IPv4 addresses
//     ("2130706433", "0x7f.1", "017700000001") are treated as the
//     address they denote, so they cannot be used to sidestep the rules.
//  3. Blocked patterns win: a host matching any blocked pattern is refused
//     ([ReasonBlocked]) even if it is also allowed.
//  4. If the allowed list is non-empty, a host matching none of its
//     patterns is refused ([ReasonNotAllowed]). An empty allowed list
//     allows every host that is not blocked.
//  5. Private networks are refused ([ReasonPrivate]): IP literals,
//     "localhost" and "*.localhost", and host names that resolve to any
//     loopback, private (RFC 1918, fc00::/7), link-local (169.254.0.0/16,
//     fe80::/10), unspecified or "this network" (0.0.0.0/8) and
//     carrier-grade NAT (100.64.0.0/10) address, including IPv4-mapped
//     IPv6 forms of these. This rule is skipped when the policy allows
//     private networks (WAYFINDER_ALLOW_PRIVATE_NETWORKS) or when the host
//     is named explicitly in the allowed list, that is by an exact,
//     non-wildcard pattern ("localhost", "10.0.0.5", "intranet.corp").
//     Neither "*" nor "*.corp" unlocks private networks.
//
// Name resolution for rule 5 happens only when it can matter: the host is
// not an IP literal, private networks are not allowed, and the host is not
// explicitly allowed. Results are not cached. A resolution failure is not
// a policy violation: the check passes (the navigation will fail on its
// own when the browser cannot resolve the name either). If the context is
// done, the context's error is returned instead.
//
// The check resolves names independently of the browser, so it cannot
// protect against a name whose DNS answer changes between the check and
// the connection (DNS rebinding). A complete defence has to be applied
// where connections are made.
//
// Every error returned for a policy violation is a [*BlockedError] and
// matches [ErrBlocked] with [errors.Is].
package guard
