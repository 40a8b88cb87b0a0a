package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// navigationTimeout bounds every page load of the benchmark.
const navigationTimeout = 30 * time.Second

// wayfinderDriver drives one Wayfinder page (internal/browser) with the
// defaults the agent gets: a default snapshot (at most 100 elements by
// priority) rendered as text, a PNG of the viewport.
type wayfinderDriver struct {
	page *browser.Page
	last *browser.Snapshot
}

func (d *wayfinderDriver) open(ctx context.Context, url string) error {
	d.last = nil
	return d.page.Navigate(ctx, url, navigationTimeout)
}

// snapshot times the whole of what the model's text costs: reading the
// page and rendering it.
func (d *wayfinderDriver) snapshot(ctx context.Context) (string, error) {
	snap, err := d.page.Snapshot(ctx, browser.SnapshotOptions{})
	if err != nil {
		return "", err
	}
	d.last = snap
	return snap.Text(), nil
}

func (d *wayfinderDriver) screenshot(ctx context.Context) ([]byte, error) {
	img, err := d.page.Capture(ctx, browser.ScreenshotOptions{Format: browser.FormatPNG})
	if err != nil {
		return nil, err
	}
	return img.Data, nil
}

// click clicks t by the ref of the latest snapshot, with the session's
// default action options (pre-checks, event-driven settling).
func (d *wayfinderDriver) click(ctx context.Context, t Target) error {
	ref, err := findElement(d.last, t)
	if err != nil {
		return err
	}
	res, err := d.page.Do(ctx, browser.Action{Kind: browser.ActionClick, Ref: ref, SnapshotID: d.last.ID})
	if err != nil {
		return err
	}
	if !res.Success {
		return fmt.Errorf("click %s: %w", ref, res.Error)
	}
	return nil
}

// findElement returns the ref of the first element of snap with t's role
// and name.
func findElement(snap *browser.Snapshot, t Target) (string, error) {
	if snap == nil {
		return "", errors.New("no snapshot taken on this page")
	}
	for _, e := range snap.Elements {
		if e.Role == t.Role && e.Name == t.Name {
			return e.Ref, nil
		}
	}
	return "", fmt.Errorf("%w: %s (%d of %d elements listed)", errNoTarget, t, len(snap.Elements), snap.Total)
}
