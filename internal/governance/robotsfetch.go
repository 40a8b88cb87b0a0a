package governance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Defaults of the robots.txt cache.
const (
	// DefaultRobotsTTL is how long a fetched robots.txt is used (RFC 9309
	// §2.4 allows at most 24 hours).
	DefaultRobotsTTL = time.Hour
	// robotsErrorTTL is how long a server error's "disallow all" is kept
	// before the file is asked for again.
	robotsErrorTTL = time.Minute
	// robotsFetchTimeout bounds one fetch.
	robotsFetchTimeout = 10 * time.Second
	// maxRobotsRedirects is how many redirects a fetch follows (RFC 9309
	// §2.3.1.2: at least five).
	maxRobotsRedirects = 5
	// maxRobotsOrigins bounds the cache.
	maxRobotsOrigins = 4096
)

// robotsAgent is the User-Agent header of robots.txt requests.
const robotsAgent = "Wayfinder/1.0 (robots.txt)"

// robotsCache holds parsed robots.txt files per origin for a worker
// process, so every run on it asks a site for its file once per TTL.
type robotsCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*robotsEntry
}

type robotsEntry struct {
	ready   chan struct{} // closed when robots is set
	robots  *robotsRules
	expires time.Time
}

func newRobotsCache(ttl time.Duration, now func() time.Time) *robotsCache {
	if ttl <= 0 {
		ttl = DefaultRobotsTTL
	}
	return &robotsCache{ttl: ttl, now: now, entries: map[string]*robotsEntry{}}
}

// get returns the robots.txt of origin ("scheme://host[:port]"), fetched
// with client when the cache has none that is fresh. Concurrent callers for
// one origin share one fetch.
func (c *robotsCache) get(ctx context.Context, client *http.Client, origin string) (*robotsRules, error) {
	for {
		c.mu.Lock()
		e := c.entries[origin]
		if e != nil {
			select {
			case <-e.ready:
				if c.now().Before(e.expires) {
					c.mu.Unlock()
					return e.robots, nil
				}
				e = nil // stale: fetch again
			default:
			}
		}
		if e != nil { // a fetch is under way
			c.mu.Unlock()
			select {
			case <-e.ready:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		if len(c.entries) >= maxRobotsOrigins {
			c.evictLocked()
		}
		e = &robotsEntry{ready: make(chan struct{})}
		c.entries[origin] = e
		c.mu.Unlock()

		r, ttl, err := fetchRobots(ctx, client, origin)
		c.mu.Lock()
		if err != nil {
			// Not cached: the next check asks again (a network error may
			// be this run's alone, such as its domain policy).
			delete(c.entries, origin)
			close(e.ready)
			c.mu.Unlock()
			return nil, err
		}
		if ttl > c.ttl {
			ttl = c.ttl
		}
		e.robots, e.expires = r, c.now().Add(ttl)
		close(e.ready)
		c.mu.Unlock()
		return r, nil
	}
}

// evictLocked drops expired entries, and everything when none has expired.
func (c *robotsCache) evictLocked() {
	now := c.now()
	for k, e := range c.entries {
		select {
		case <-e.ready:
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		default:
		}
	}
	if len(c.entries) >= maxRobotsOrigins {
		for k, e := range c.entries {
			select {
			case <-e.ready:
				delete(c.entries, k)
			default:
			}
		}
	}
}

// errRobotsUnreachable wraps a failure to reach a site's robots.txt.
var errRobotsUnreachable = errors.New("robots.txt unreachable")

// errRobotsBlocked: the run's network guard refused the fetch (the run's
// domain policy does not allow the site, so the navigation is refused
// anyway).
var errRobotsBlocked = errors.New("robots.txt fetch refused by the run's network guard")

// blockedHeader is the header the network guard (internal/netguard) sets on
// the answers it gives instead of a site.
const blockedHeader = "X-Wayfinder-Blocked"

// fetchRobots fetches and parses origin's robots.txt, and says how long
// the answer holds. Per RFC 9309 §2.3.1: 2xx is parsed; other 4xx (the
// file is unavailable, also after more than five redirects) allows
// everything; 429 and 5xx mean complete disallow for a short while. A network error is returned as an error
// wrapping errRobotsUnreachable.
func fetchRobots(ctx context.Context, client *http.Client, origin string) (*robotsRules, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, robotsFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/robots.txt", nil)
	if err != nil {
		return nil, 0, fmt.Errorf("robots.txt of %s: %w", origin, err)
	}
	req.Header.Set("User-Agent", robotsAgent)
	req.Header.Set("Accept", "text/plain, */*;q=0.5")
	c := *client
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRobotsRedirects {
			return http.ErrUseLastResponse // unavailable (below)
		}
		return nil
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in our message already
		}
		return nil, 0, fmt.Errorf("%w: %s/robots.txt: %w", errRobotsUnreachable, origin, err)
	}
	defer resp.Body.Close()
	if resp.Header.Get(blockedHeader) != "" {
		return nil, 0, fmt.Errorf("%w: %s", errRobotsBlocked, resp.Header.Get(blockedHeader))
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxRobotsBytes))
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s/robots.txt: %w", errRobotsUnreachable, origin, err)
		}
		return parseRobots(body, UserAgent), DefaultRobotsTTL, nil
	case code == http.StatusTooManyRequests || code >= 500:
		return disallowAll, robotsErrorTTL, nil
	default:
		// Other 4xx, and a 3xx left after too many redirects: the file is
		// unavailable, which allows everything (RFC 9309 §2.3.1.2-3).
		return allowAll, DefaultRobotsTTL, nil
	}
}
