package suiterun

import (
	"sync"

	"github.com/wayfinder/wayfinder/internal/events"
)

// waker gathers the hub's wake-ups of the keys an execution watches (its
// suite run's and its runs' in flight) into one signal and a set of the
// keys that fired. Wake-ups are hints: the execution reads the store.
type waker struct {
	hub    *events.Hub // nil: no wake-ups; the execution polls
	signal chan struct{}

	mu    sync.Mutex
	dirty map[string]bool

	stops map[string]func() // owned by the execution's goroutine
	wg    sync.WaitGroup
}

func newWaker(hub *events.Hub) *waker {
	return &waker{hub: hub, signal: make(chan struct{}, 1), dirty: map[string]bool{}, stops: map[string]func(){}}
}

// watch subscribes to key's wake-ups and marks key at once: it may have
// changed before the subscription began.
func (w *waker) watch(key string) {
	w.mark(key)
	if w.hub == nil {
		return
	}
	if _, ok := w.stops[key]; ok {
		return
	}
	ch, unsubscribe := w.hub.Subscribe(key)
	done := make(chan struct{})
	w.wg.Go(func() {
		for {
			select {
			case <-ch:
				w.mark(key)
			case <-done:
				return
			}
		}
	})
	w.stops[key] = func() { close(done); unsubscribe() }
}

// unwatch ends key's subscription.
func (w *waker) unwatch(key string) {
	if stop, ok := w.stops[key]; ok {
		stop()
		delete(w.stops, key)
	}
}

// close ends every subscription and waits for their goroutines.
func (w *waker) close() {
	for key := range w.stops {
		w.unwatch(key)
	}
	w.wg.Wait()
}

func (w *waker) mark(key string) {
	w.mu.Lock()
	w.dirty[key] = true
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default: // already pending
	}
}

// take returns the keys that fired since the last call.
func (w *waker) take() map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.dirty
	w.dirty = map[string]bool{}
	return d
}
