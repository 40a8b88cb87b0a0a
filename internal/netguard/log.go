package netguard

import (
	"sync"
	"time"

	"github.com/wayfinder/wayfinder/internal/guard"
)

// Kind says what sort of request was refused.
type Kind string

// The kinds of refused requests.
const (
	// KindNavigation: a document load (top-level page, popup or iframe),
	// including a redirect hop of one.
	KindNavigation Kind = "navigation"
	// KindSubresource: anything else a page fetched over plain HTTP (images,
	// scripts, fetch/XHR, form posts that are not navigations).
	KindSubresource Kind = "subresource"
	// KindConnect: an HTTPS or WSS tunnel (the proxy cannot see inside it,
	// so it cannot tell a navigation from a subresource there).
	KindConnect Kind = "connect"
	// KindWebSocket: a websocket handshake sent as a plain-HTTP Upgrade.
	// Chromium tunnels its websockets through CONNECT instead, so in a run
	// they are KindConnect.
	KindWebSocket Kind = "websocket"
)

// Block is one refused request.
type Block struct {
	// Seq numbers the blocks of one [Log] from 0, in the order they were
	// recorded; it keeps counting when old blocks are dropped.
	Seq uint64
	// Time is when the request was refused.
	Time time.Time
	// Kind is what sort of request it was.
	Kind Kind
	// URL is the refused URL, or "host:port" for a CONNECT tunnel.
	URL string
	// Host is the normalised host, when the URL had a valid one.
	Host string
	// Reason is the rule that refused it.
	Reason guard.Reason
	// Message explains the refusal for humans (the policy's error text).
	Message string
}

// DefaultMaxBlocks is how many blocks a [Log] keeps when not told.
const DefaultMaxBlocks = 1000

// Log is a bounded in-memory record of refused requests: it keeps the most
// recent blocks and counts all of them. The zero value is not usable; create
// it with [NewLog]. It is safe for concurrent use.
type Log struct {
	metrics *Metrics

	mu    sync.Mutex
	ring  []Block // capacity max; ring[next%max] is the oldest once full
	next  uint64  // Seq of the next block
	max   int
	clock func() time.Time
}

// NewLog returns a log that keeps the last max blocks (DefaultMaxBlocks
// when max <= 0) and counts every block in m (nil: no metrics).
func NewLog(max int, m *Metrics) *Log {
	if max <= 0 {
		max = DefaultMaxBlocks
	}
	return &Log{metrics: m, max: max, clock: time.Now}
}

// Record adds b to the log, setting its Seq, and its Time when zero, and
// returns the recorded block.
func (l *Log) Record(b Block) Block {
	l.mu.Lock()
	if b.Time.IsZero() {
		b.Time = l.clock()
	}
	b.Seq = l.next
	l.next++
	if len(l.ring) < l.max {
		l.ring = append(l.ring, b)
	} else {
		l.ring[b.Seq%uint64(l.max)] = b
	}
	l.mu.Unlock()
	l.metrics.observe(b)
	return b
}

// Total returns how many blocks were ever recorded, which is also the Seq
// the next block will get.
func (l *Log) Total() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// Since returns the retained blocks whose Seq is at least seq, oldest first,
// and the Seq to pass next time. Blocks dropped for space are skipped: when
// next-seq exceeds len(blocks), that many were lost.
func (l *Log) Since(seq uint64) (blocks []Block, next uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	oldest := uint64(0)
	if n := uint64(len(l.ring)); l.next > n {
		oldest = l.next - n
	}
	if seq < oldest {
		seq = oldest
	}
	for s := seq; s < l.next; s++ {
		blocks = append(blocks, l.ring[s%uint64(l.max)])
	}
	return blocks, l.next
}

// Blocks returns every retained block, oldest first.
func (l *Log) Blocks() []Block {
	b, _ := l.Since(0)
	return b
}
