package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
)

// ModelKeys opens the stored credentials whose API keys a tenant's models
// use (ModelSettings.api_key_credential), by credential name, and records
// each use in the audit log with actor (e.g. "run:<id>"). Names may be
// empty: the result is then empty.
func ModelKeys(ctx context.Context, st *store.Store, keyring *secrets.Keyring, logger *slog.Logger, tenantID, actor, runID string, names []string) (map[string]string, error) {
	keys := make(map[string]string, len(names))
	for _, name := range names {
		if keyring == nil {
			return nil, errors.New("stored credentials cannot be opened: the server has no encryption key")
		}
		c, err := st.OpenCredential(ctx, keyring, tenantID, name)
		if err != nil {
			return nil, fmt.Errorf("model API key credential %q: %w", name, err)
		}
		if c.Values["api_key"] == "" {
			return nil, fmt.Errorf("model API key credential %q has no api_key field", name)
		}
		keys[name] = c.Values["api_key"]
		if err := st.RecordAudit(ctx, store.Audit{Tenant: tenantID, Kind: store.AuditCredentialUsed,
			Actor: actor, Subject: name, RunID: runID,
			Details: map[string]any{"use": "model_api_key", "version": c.Version}}); err != nil {
			logger.WarnContext(ctx, "recording audit event", "error", err)
		}
	}
	return keys, nil
}
