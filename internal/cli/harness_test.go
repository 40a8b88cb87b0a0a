package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/cli"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/server"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// testEncryptionKeys is the servers' keyring (as in internal/server's
// harness).
const testEncryptionKeys = "test1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// startServer runs an in-process Wayfinder until the test ends and returns
// its gRPC address. adminKey turns API keys on.
func startServer(t *testing.T, adminKey string) string {
	t.Helper()
	cfg, err := config.Load("test", nil, func(string) string { return "" })
	require.NoError(t, err)
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DatabaseURL, cfg.DataDir = storetest.NewDB(t), t.TempDir()
	cfg.BrowserCapacity = 2
	cfg.RunTimeout, cfg.ShutdownTimeout = time.Minute, 10*time.Second
	cfg.AdminKey, cfg.EncryptionKeys = adminKey, testEncryptionKeys

	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan server.Addrs, 1), make(chan error, 1)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() {
		done <- server.Run(ctx, cfg, server.Options{Logger: logger, ReapInterval: time.Second, Ready: func(a server.Addrs) { ready <- a }})
	}()
	var addrs server.Addrs
	select {
	case addrs = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	case <-time.After(2 * time.Minute):
		cancel()
		t.Fatal("server did not start in 2 minutes")
	}
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return addrs.GRPC
}

// site is the test web site on 127.0.0.1: "/" says hello, "/stall" holds
// the request until released (while stalls remain).
type site struct {
	*httptest.Server
	stalls  atomic.Int64
	release chan struct{}
	once    sync.Once
}

func newSite(t *testing.T) *site {
	s := &site{release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Test page</title><h1>Hello from the test site</h1><button>Go</button>`)
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		if s.stalls.Add(-1) >= 0 {
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprint(w, `<!doctype html><title>Slow page</title><p>Hello from the test site, finally</p>`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.unstall()
		s.Server.CloseClientConnections()
		s.Server.Close()
	})
	return s
}

func (s *site) unstall() { s.once.Do(func() { close(s.release) }) }

// client runs the wayfinder client commands in-process against one server.
type client struct {
	addr string
	env  map[string]string
}

func newClient(addr string) *client {
	return &client{addr: addr, env: map[string]string{"WAYFINDER_ADDR": addr}}
}

// result is how a command ended.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs `wayfinder args...` to its end.
func (c *client) run(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := c.main(context.Background(), args, &stdout, &stderr, false)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func (c *client) main(ctx context.Context, args []string, stdout, stderr io.Writer, terminal bool) int {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	return cli.Main(ctx, args, cli.Env{
		Stdout: stdout, Stderr: stderr, Terminal: terminal,
		Getenv: func(k string) string { return c.env[k] },
	})
}

// background is a command running in another goroutine whose stdout is
// read line by line.
type background struct {
	lines  chan string
	done   chan struct{}
	code   int
	stderr *syncBuffer
	cancel context.CancelFunc
}

// start runs `wayfinder args...` in the background.
func (c *client) start(t *testing.T, args ...string) *background {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{lines: make(chan string, 1000), done: make(chan struct{}), stderr: &syncBuffer{}, cancel: cancel}
	go func() {
		b.code = c.main(ctx, args, pw, b.stderr, false)
		pw.Close()
		close(b.done)
	}()
	go func() {
		defer close(b.lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		cancel()
		for range b.lines {
		}
		<-b.done
	})
	return b
}

// nextEvent reads JSON lines until an event satisfying ok arrives.
func (b *background) nextEvent(t *testing.T, seen *[]*wfv1.RunEvent, ok func(*wfv1.RunEvent) bool) *wfv1.RunEvent {
	t.Helper()
	for line := range b.lines {
		ev := &wfv1.RunEvent{}
		require.NoError(t, protojson.Unmarshal([]byte(line), ev), "line: %s", line)
		*seen = append(*seen, ev)
		if ok(ev) {
			return ev
		}
	}
	t.Fatalf("output ended before the awaited event; stderr: %s", b.stderr.String())
	return nil
}

// wait returns the exit code once the command has ended, with the rest of
// its output.
func (b *background) wait(t *testing.T) (int, []string) {
	t.Helper()
	var rest []string
	for line := range b.lines {
		rest = append(rest, line)
	}
	<-b.done
	return b.code, rest
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// parseEvents parses JSON lines of RunEvents.
func parseEvents(t *testing.T, out string) []*wfv1.RunEvent {
	t.Helper()
	var evs []*wfv1.RunEvent
	for line := range strings.Lines(out) {
		ev := &wfv1.RunEvent{}
		require.NoError(t, protojson.Unmarshal([]byte(line), ev), "line: %s", line)
		evs = append(evs, ev)
	}
	return evs
}

// requireSequential checks that events are numbered 1, 2, 3, … with no gap
// or repeat and end with FINISHED.
func requireSequential(t *testing.T, evs []*wfv1.RunEvent) {
	t.Helper()
	require.NotEmpty(t, evs)
	for i, ev := range evs {
		require.Equal(t, int64(i+1), ev.GetSequence(), "event %d: %v", i, ev)
	}
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, evs[len(evs)-1].GetType())
}

// proxy forwards TCP connections to target until cut drops them all.
type proxy struct {
	ln       net.Listener
	target   string
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(up, c); up.Close() })
			wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// cut drops every open connection (new ones are still accepted).
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
