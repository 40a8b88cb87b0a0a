// Package governance holds the politeness and consent rules of Wayfinder's
// runs (seed 004 §6, §7, §11), as runner hooks around every browser action:
//
//   - Per-domain rate limits: at most N actions a minute on a registrable
//     domain, spaced 60s/N ± 25% at random, plus a site profile's polite
//     delay after each action. The schedule is shared by all runs of a
//     worker process (a Governor), not across processes.
//   - robots.txt (RFC 9309, user agent "Wayfinder"), when a run asks for
//     it: checked before every navigation, fetched through the run's own
//     egress and cached per process; pages reached anyway (links,
//     redirects) may only be left.
//   - Cookie and consent banners by the run's policy (model, auto, reject,
//     ask): known banners are found by a site profile's selectors, the
//     built-in list of consent managers (consent.json) or their usual
//     button texts, and clicked by the service.
//   - Site profiles: what is known about a site (selectors, consent
//     selectors, pacing, notes), from the server's directory and the
//     tenant's own, told to the model on the first visit of the site.
//   - Persistent browser profiles: the cookies and localStorage a run
//     saves (BrowserState) and the next run of the profile restores.
//
// The package decides and acts on pages; the worker wires it to the store
// (events, audit, profiles) and to the run's browser context.
package governance
