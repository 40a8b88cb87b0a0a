package pool

import (
	"sync"

	"github.com/go-rod/rod/lib/proto"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// Lease is one run's isolated browser context. Release it when the run ends.
//
// A lease ends early when its browser crashes, hangs or the pool closes:
// Done is closed and Err wraps browser.ErrBrowserGone, and the session's
// calls fail. The runner watches Done to stop waiting on a dead browser,
// and classifies the error as a browser crash it can recover from.
type Lease struct {
	pool      *Pool
	proc      *process
	session   *browser.Session
	contextID proto.BrowserBrowserContextID
	once      sync.Once

	mu   sync.Mutex
	done chan struct{}
	err  error
}

// Session returns the leased browser context.
func (l *Lease) Session() *browser.Session { return l.session }

// Done is closed when the lease ends: its browser failed, the pool closed,
// or it was released.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while the lease is live. After Done is closed it is an error
// wrapping browser.ErrBrowserGone when the browser failed (or the pool
// closed), and ErrReleased after a normal Release.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// fail ends a live lease with err.
func (l *Lease) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
		close(l.done)
	}
}

// Release gives the context back. It does not wait for the browser: the
// context is closed in the background with a deadline, and a browser that
// does not close it in time is checked and replaced. Calling it again does
// nothing.
func (l *Lease) Release() {
	l.once.Do(func() {
		l.fail(ErrReleased)
		l.pool.release(l)
	})
}
