// Package web holds the Wayfinder dashboard: a static page (index.html,
// CSS and plain JavaScript modules, no build step) embedded into the binary
// and served by the HTTP server under /ui/.
//
// The page talks only to the public REST API of the same origin: it lists
// runs (GET /v1/runs), follows them live (GET /v1/events:sse, falling back
// to polling), shows a run's steps, prompt runs and screenshots, answers
// approvals (POST /v1/runs/{id}:approve) and cancels runs; it follows suite
// runs (GET /v1/suite-runs) and lists, pins, exports and deletes replayable
// traces (GET /v1/traces). Everything a page or a model produced is
// untrusted and is rendered as text.
package web

import (
	"embed"
	"io/fs"
)

//go:embed index.html app.css *.js
var files embed.FS

// Files returns the dashboard's files (index.html at the root). It is
// read-only and safe for concurrent use.
func Files() fs.FS { return files }
