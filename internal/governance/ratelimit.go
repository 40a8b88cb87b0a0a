package governance

import (
	"context"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"
)

// jitterFraction is how far, either way, the spacing between two actions on
// one domain strays from 60s/N at random, so a run's rhythm is not
// machine-regular.
const jitterFraction = 0.25

// maxIdleDomains is how many domains the limiter remembers before it
// forgets those whose spacing has passed.
const maxIdleDomains = 1024

// limiter spaces browser actions per domain: at most N actions a minute,
// each one 60s/N (± jitterFraction, at random) after the previous one, plus
// the polite delay a site profile asks for after every action. One limiter
// is shared by all runs of a worker process, so a fleet of runs on one
// worker is polite to a site together; it is not coordinated across worker
// processes. Safe for concurrent use.
type limiter struct {
	now    func() time.Time
	jitter func() float64 // in [-1, 1)
	sleep  func(ctx context.Context, d time.Duration) error

	mu      sync.Mutex
	domains map[string]*domainSlot
}

// domainSlot is one domain's schedule.
type domainSlot struct {
	// next is the earliest start of the next action by the rate.
	next time.Time
	// politeUntil is the earliest start of the next action by the polite
	// delay after the previous one.
	politeUntil time.Time
}

// newLimiter returns a limiter on the real clock.
func newLimiter() *limiter {
	return &limiter{
		now:     time.Now,
		jitter:  func() float64 { return rand.Float64()*2 - 1 },
		sleep:   sleepCtx,
		domains: map[string]*domainSlot{},
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// spacing is the mean pause between the starts of two actions at perMinute
// actions a minute (0 when perMinute is 0 or less: no limit).
func spacing(perMinute int) time.Duration {
	if perMinute <= 0 {
		return 0
	}
	return time.Minute / time.Duration(perMinute)
}

// reserve books the next slot for an action on domain and returns how long
// to wait for it, and a func that gives the slot back (for a wait that was
// abandoned).
func (l *limiter) reserve(domain string, perMinute int) (time.Duration, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	s := l.domains[domain]
	if s == nil {
		l.forgetIdle(now)
		s = &domainSlot{}
		l.domains[domain] = s
	}
	start := now
	if s.next.After(start) {
		start = s.next
	}
	if s.politeUntil.After(start) {
		start = s.politeUntil
	}
	prev := s.next
	if sp := spacing(perMinute); sp > 0 {
		s.next = start.Add(time.Duration(float64(sp) * (1 + jitterFraction*l.jitter())))
	}
	booked := s.next
	undo := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if s.next.Equal(booked) { // nobody booked after us
			s.next = prev
		}
	}
	return start.Sub(now), undo
}

// forgetIdle drops the domains whose schedule is in the past once there
// are many, so a long-lived worker does not remember every site it saw.
func (l *limiter) forgetIdle(now time.Time) {
	if len(l.domains) < maxIdleDomains {
		return
	}
	for d, s := range l.domains {
		if !s.next.After(now) && !s.politeUntil.After(now) {
			delete(l.domains, d)
		}
	}
}

// Wait blocks until an action on domain may start at perMinute actions a
// minute (0: no rate, only a pending polite delay), or ctx ends. It returns
// how long it waited; a wait cut short by ctx returns ctx's cause and gives
// the slot back.
func (l *limiter) Wait(ctx context.Context, domain string, perMinute int) (time.Duration, error) {
	d, undo := l.reserve(domain, perMinute)
	if d <= 0 {
		return 0, nil
	}
	if err := l.sleep(ctx, d); err != nil {
		undo()
		return 0, err
	}
	return d, nil
}

// Done records that an action on domain finished: the next one on the
// domain starts no sooner than delay from now (a site profile's polite
// delay).
func (l *limiter) Done(domain string, delay time.Duration) {
	if delay <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.domains[domain]
	if s == nil {
		l.forgetIdle(l.now())
		s = &domainSlot{}
		l.domains[domain] = s
	}
	if until := l.now().Add(delay); until.After(s.politeUntil) {
		s.politeUntil = until
	}
}

// Domain is the key the limiter counts a host under: its registrable
// domain (www.example.co.uk and shop.example.co.uk are both example.co.uk),
// or the host itself for IP addresses, localhost and hosts without a
// registrable part. Ports do not matter.
func Domain(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "" || net.ParseIP(host) != nil {
		return host
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return d
	}
	return host
}
