// Package migrations embeds Wayfinder's SQL schema migrations so that the
// server binary can apply them at start (and with `wayfinder migrate`).
//
// Files are named NNNNN_description.sql and use goose annotations. River's
// own tables are not here: they are applied by River's migrator, which the
// store runs right after these.
package migrations

import "embed"

// FS holds every *.sql migration, applied in file-name order.
//
//go:embed *.sql
var FS embed.FS
