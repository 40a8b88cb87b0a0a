// Package netguard enforces a run's domain policy on every request its
// browser context makes.
//
// Each run gets its own forward proxy ([Start]) and its Chromium context is
// created with that proxy (browser.SessionOptions.ProxyServer, with the
// bypass list "<-loopback>" so that loopback goes through it too). Every
// plain-HTTP request and every CONNECT tunnel of the context then passes
// the proxy: navigations, redirect hops, subresources, fetch/XHR, form
// posts, popups and iframes alike. Chromium tunnels every websocket (ws://
// as well as wss://) and every https request through CONNECT; the proxy
// also forwards plain-HTTP Upgrade requests, which other clients send.
//
// For each request the proxy applies the run's [guard.Policy] (the one
// implementation of what allowed and blocked domains, schemes and private
// networks mean) with a resolver that remembers its answer, and then dials
// exactly the addresses the policy approved. A host name is resolved at most once
// per request, so an answer that changes between the check and the
// connection (DNS rebinding) cannot reach a private address. When the policy
// has no need for the addresses (private networks allowed, or the host named
// explicitly), the proxy resolves the name itself and any answer is
// acceptable. Answers are cached per proxy for Config.DNSCacheTTL (as the
// browser's own host cache would have done); the cached answer is both
// checked and dialed, so the cache pins addresses rather than loosening
// anything.
//
// A refused plain-HTTP request gets 403 with a short text body naming the
// reason and an X-Wayfinder-Blocked header; a refused tunnel gets 403 to its
// CONNECT, which Chromium reports as net::ERR_TUNNEL_CONNECTION_FAILED. A
// host that does not resolve gets 502. Every refusal is recorded in the
// run's [Log] (bounded, readable by sequence number) and counted in
// wayfinder_network_blocked_total{reason,kind}.
//
// The proxy cannot see inside TLS, so it tells navigations from
// subresources only for plain HTTP (by Sec-Fetch-Mode, or the Accept header
// Chromium sends for documents); a refused tunnel is [KindConnect].
//
// What the proxy cannot cover (URLs that never reach the network, such as
// file:, and request headers inside TLS) is handled with CDP by
// browser.Session.StartNetwork.
package netguard
