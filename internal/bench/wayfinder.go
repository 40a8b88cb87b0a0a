package bench

import (
	"context"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// navigationTimeout bounds every page load of the benchmark.
const navigationTimeout = 30 * time.Second

// wayfinderDriver drives one Wayfinder page (internal/browser).
type wayfinderDriver struct {
	page *browser.Page
}

func (d *wayfinderDriver) open(ctx context.Context, url string) error {
	return d.page.Navigate(ctx, url, navigationTimeout)
}

func (d *wayfinderDriver) snapshot(context.Context) (string, error) {
	return "", pendingf("browser.Page.Snapshot is not built yet")
}

func (d *wayfinderDriver) screenshot(ctx context.Context) ([]byte, error) {
	return d.page.Screenshot(ctx)
}

func (d *wayfinderDriver) click(context.Context, Target) error {
	return pendingf("browser.Page.Do is not built yet")
}
