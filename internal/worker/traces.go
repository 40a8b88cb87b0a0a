package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// TraceKey is the task key of a run's trace (trace.Key): its goal, its
// start URL and the params that change what the run does on the page
// (browser emulation, auth, custom tools, completion criteria, domain
// lists, checkpoints). Models, budgets, limits (timeouts included), labels
// and webhooks are left out: a replay of the same task under other ones is the same path.
// p are the run's stored params, redacted, so no secret value (only its
// reference) goes into the key.
func TraceKey(p *wfv1.RunParams) (string, error) {
	var browser *wfv1.BrowserConfig
	if b := p.GetBrowser(); b != nil {
		// The page's emulation and profile, not the run's limits (filled in
		// from the server's maximum, which may change).
		browser = &wfv1.BrowserConfig{Viewport: b.GetViewport(), UserAgent: b.GetUserAgent(), Locale: b.GetLocale(),
			Timezone: b.GetTimezone(), Profile: b.GetProfile()}
		if proto.Size(browser) == 0 {
			browser = nil // as if none was given
		}
	}
	sel := &wfv1.RunParams{Browser: browser, Auth: p.GetAuth(), Tools: p.GetTools(), Completion: p.GetCompletion(),
		AllowedDomains: p.GetAllowedDomains(), BlockedDomains: p.GetBlockedDomains(), Checkpoints: p.GetCheckpoints()}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(sel)
	if err != nil {
		return "", fmt.Errorf("trace key: %w", err)
	}
	sum := sha256.Sum256(b)
	return trace.Key(p.GetGoal(), p.GetStartUrl(), hex.EncodeToString(sum[:]))
}

// saveTrace stores a completed run's trace under key, redacted again;
// healedFrom names the trace a healed replay started from.
func (s *sink) saveTrace(ctx context.Context, tenantID, key, healedFrom string, t *trace.Trace) (*store.Trace, error) {
	actions, final, err := t.Encode()
	if err != nil {
		return nil, err
	}
	return s.store.SaveTrace(ctx, store.Trace{RunID: s.runID, TenantID: tenantID, Key: key, HealedFrom: healedFrom,
		Actions: s.redact.Bytes(actions), Final: s.redact.Bytes(final)})
}
