package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/netguard"
	"github.com/wayfinder/wayfinder/internal/pool"
)

// leasedBrowser is a run's browser context from the pool (runner.Browser):
// a crashed context is replaced by a new lease behind the same network
// guard, with the same network rules.
type leasedBrowser struct {
	pool   *pool.Pool
	proxy  string
	blocks *netguard.Log
	log    *slog.Logger
	// rules are the network rules of every context of the run (auth
	// headers, cookies, storage); OnBlock is set by start.
	rules browser.NetworkRules
	// setup is called, in order, on every new context (the first and each
	// replacement) once its network rules are in place.
	setup   []func(ctx context.Context, s *browser.Session) error
	lease   *pool.Lease
	network interface{ Close() error }
}

func (b *leasedBrowser) start(ctx context.Context) error {
	lease, err := b.pool.Lease(ctx, browser.SessionOptions{ProxyServer: b.proxy})
	if err != nil {
		return err
	}
	rules := b.rules
	// URLs that never reach the proxy (file:) are refused in the browser.
	rules.OnBlock = func(bl browser.BlockedRequest) {
		kind := netguard.KindSubresource
		if bl.Navigation {
			kind = netguard.KindNavigation
		}
		block := netguard.Block{Kind: kind, URL: bl.URL, Reason: guard.ReasonScheme}
		if bl.Err != nil {
			block.Host, block.Reason, block.Message = bl.Err.Host, bl.Err.Reason, bl.Err.Error()
		}
		b.blocks.Record(block)
	}
	network, err := lease.Session().StartNetwork(ctx, rules)
	if err != nil {
		lease.Release()
		return err
	}
	b.lease, b.network = lease, network
	for _, f := range b.setup {
		if err := f(ctx, lease.Session()); err != nil {
			b.close()
			return err
		}
	}
	return nil
}

func (b *leasedBrowser) Session() *browser.Session { return b.lease.Session() }

func (b *leasedBrowser) Done() <-chan struct{} { return b.lease.Done() }

// Renew releases the dead lease and takes a new one.
func (b *leasedBrowser) Renew(ctx context.Context) (*browser.Session, error) {
	b.log.WarnContext(ctx, "browser context lost; leasing a new one", "error", b.lease.Err())
	b.close()
	// The pool may not have noticed the crash yet and hand out a context
	// of the dying process: try again until it has replaced it.
	wait := 250 * time.Millisecond
	for {
		err := b.start(ctx)
		if err == nil {
			return b.lease.Session(), nil
		}
		if !errors.Is(err, browser.ErrBrowserGone) || ctx.Err() != nil {
			return nil, fmt.Errorf("lease a new browser context: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lease a new browser context: %w", errors.Join(err, ctx.Err()))
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

func (b *leasedBrowser) close() {
	if b.network != nil {
		_ = b.network.Close()
		b.network = nil
	}
	if b.lease != nil {
		b.lease.Release() // a second call does nothing
	}
}

// Egress returns the HTTP client the server uses for calls it makes on a
// run's behalf (custom tool webhooks, the prompt-runner webhook). Unless
// allowPrivate, it refuses to connect to private, loopback, link-local and
// unspecified addresses, checked on the address actually dialled (so DNS
// rebinding cannot sneak past).
func Egress(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("egress to %s refused: %w", address, err)
			}
			if a := ap.Addr().Unmap(); a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
				a.IsLinkLocalMulticast() || a.IsUnspecified() || a.IsMulticast() {
				return fmt.Errorf("egress to private address %s refused (WAYFINDER_ALLOW_PRIVATE_NETWORKS is off)", a)
			}
			return nil
		}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = d.DialContext
	t.Proxy = nil
	return &http.Client{Transport: t}
}
