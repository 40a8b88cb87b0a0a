package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/server"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// binary is the server binary built once for tests that need a second
// process.
var binary struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) { storetest.Main(m) }

func serverBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		dir, err := os.MkdirTemp("", "wayfinder-bin-")
		if err != nil {
			binary.err = err
			return
		}
		binary.path = filepath.Join(dir, "wayfinder")
		out, err := exec.Command("go", "build", "-o", binary.path, "github.com/wayfinder/wayfinder/cmd/wayfinder").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	require.NoError(t, binary.err)
	return binary.path
}

// testServer is an in-process Wayfinder.
type testServer struct {
	addrs   server.Addrs
	dataDir string
	client  wfv1.RunServiceClient
	conn    *grpc.ClientConn
	cancel  context.CancelFunc
	done    chan error
}

type serverOpts struct {
	role       config.Role
	runTimeout time.Duration
	shutdown   time.Duration
	tracer     trace.TracerProvider
	// allowPrivate lets runs (and the server's calls for them: model
	// base URLs, webhooks) reach 127.0.0.1.
	allowPrivate bool
	// adminKey turns API keys on (WAYFINDER_ADMIN_KEY); empty is local
	// single-user mode.
	adminKey string
	// logs, when set, receives the server's log (JSON, debug level) as
	// well as the test output (warnings).
	logs io.Writer
}

// testEncryptionKeys is the keyring of every test server, so replicas of
// one test share it as a fleet must.
const testEncryptionKeys = "test1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func testConfig(t *testing.T, dbURL string, o serverOpts) config.Config {
	cfg, err := config.Load("test", nil, func(string) string { return "" })
	require.NoError(t, err)
	dataDir := t.TempDir()
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DatabaseURL, cfg.DataDir = dbURL, dataDir
	cfg.BrowserCapacity = 2
	// A run's limit is generous: `go test ./...` runs this package beside
	// others on two cores, and a run that merely waits for CPU must not
	// end RUN_TIMEOUT. Tests of the limit set their own (serverOpts).
	cfg.RunTimeout, cfg.ShutdownTimeout = 3*time.Minute, 10*time.Second
	if o.role != "" {
		cfg.Role = o.role
	}
	if o.runTimeout > 0 {
		cfg.RunTimeout = o.runTimeout
	}
	if o.shutdown > 0 {
		cfg.ShutdownTimeout = o.shutdown
	}
	cfg.AllowPrivateNetworks = o.allowPrivate
	cfg.AdminKey, cfg.EncryptionKeys = o.adminKey, testEncryptionKeys
	return cfg
}

// startServer runs a server until the test ends (or stop is called).
func startServer(t *testing.T, dbURL string, o serverOpts) *testServer {
	t.Helper()
	cfg := testConfig(t, dbURL, o)
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{cancel: cancel, done: make(chan error, 1), dataDir: cfg.DataDir}
	ready := make(chan server.Addrs, 1)
	var handler slog.Handler = slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})
	if o.logs != nil {
		handler = slog.NewMultiHandler(handler, slog.NewJSONHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	logger := slog.New(handler)
	go func() {
		ts.done <- server.Run(ctx, cfg, server.Options{
			Logger: logger, TracerProvider: o.tracer, ReapInterval: time.Second,
			Ready: func(a server.Addrs) { ready <- a },
		})
	}()
	select {
	case ts.addrs = <-ready:
	case err := <-ts.done:
		cancel()
		t.Fatalf("server did not start: %v", err)
	case <-time.After(2 * time.Minute):
		cancel()
		t.Fatal("server did not start in 2 minutes")
	}
	t.Cleanup(ts.stop)
	if ts.addrs.GRPC != "" {
		conn, err := grpc.NewClient(ts.addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		ts.conn, ts.client = conn, wfv1.NewRunServiceClient(conn)
	}
	return ts
}

// stop shuts the server down and waits for it.
func (ts *testServer) stop() {
	if ts.cancel == nil {
		return
	}
	ts.cancel()
	ts.cancel = nil
	if ts.conn != nil {
		ts.conn.Close()
	}
	<-ts.done
}

// subprocess is a Wayfinder started from the built binary.
type subprocess struct {
	cmd     *exec.Cmd
	dataDir string
	exited  chan struct{}
}

func startSubprocess(t *testing.T, dbURL string, env ...string) *subprocess {
	t.Helper()
	dataDir := t.TempDir()
	cmd := exec.Command(serverBinary(t), "serve")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL, "WAYFINDER_DATA_DIR="+dataDir,
		"WAYFINDER_GRPC_ADDR=127.0.0.1:0", "WAYFINDER_HTTP_ADDR=127.0.0.1:0",
		"WAYFINDER_LOG_FORMAT=text", "WAYFINDER_BROWSER_CAPACITY=2", "WAYFINDER_ENCRYPTION_KEYS="+testEncryptionKeys)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = t.Output(), t.Output()
	require.NoError(t, cmd.Start())
	p := &subprocess{cmd: cmd, dataDir: dataDir, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// site is a test web site on 127.0.0.1.
type site struct {
	*httptest.Server
	hits      atomic.Int64
	pixelHits atomic.Int64
	stalls    atomic.Int64
	release   chan struct{}
}

// newSite serves "/" (a small page), and "/stall" which, while stalls
// remain, holds the request open until the test releases it or ends.
func newSite(t *testing.T) *site {
	s := &site{release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		fmt.Fprint(w, `<!doctype html><title>Test page</title><h1>Hello from the test site</h1><button>Go</button>`)
	})
	mux.HandleFunc("/pixel", func(w http.ResponseWriter, r *http.Request) {
		s.pixelHits.Add(1)
		w.Header().Set("Content-Type", "image/gif")
	})
	mux.HandleFunc("/leaky", func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		// The same server under another name: not in the run's allowed list.
		other := strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
		fmt.Fprintf(w, `<!doctype html><title>Leaky</title><img src="%s/pixel"><script>fetch(%q).catch(() => {})</script>`, other, other+"/pixel?xhr")
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
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
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		s.Server.CloseClientConnections()
		s.Server.Close()
	})
	return s
}

// params returns valid run params for url on the test site.
func params(url string) *wfv1.RunParams {
	return &wfv1.RunParams{
		Goal:           "Expect text Hello from the test site",
		StartUrl:       url,
		AllowedDomains: []string{"127.0.0.1"},
	}
}

// collectEvents streams a run's events until the stream ends.
func collectEvents(t *testing.T, client wfv1.RunServiceClient, runID string, after int64) []*wfv1.RunEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	stream, err := client.StreamRunEvents(ctx, &wfv1.StreamRunEventsRequest{RunId: runID, AfterSequence: after})
	require.NoError(t, err)
	var evs []*wfv1.RunEvent
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return evs
		}
		require.NoError(t, err)
		evs = append(evs, ev)
	}
}

func eventTypes(evs []*wfv1.RunEvent) []wfv1.RunEventType {
	out := make([]wfv1.RunEventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// waitForEvent follows a run's events until one of type typ arrives.
func waitForEvent(t *testing.T, client wfv1.RunServiceClient, runID string, typ wfv1.RunEventType) *wfv1.RunEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	stream, err := client.StreamRunEvents(ctx, &wfv1.StreamRunEventsRequest{RunId: runID})
	require.NoError(t, err)
	for {
		ev, err := stream.Recv()
		require.NoError(t, err, "stream ended before a %v event", typ)
		if ev.Type == typ {
			return ev
		}
	}
}

// restJSON calls the REST API and decodes a JSON response into out (when
// not nil). It returns the HTTP status.
func restJSON(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	return restJSONKey(t, method, url, "", body, out)
}

// restJSONKey calls the REST API with key (none when empty), decodes a JSON
// answer into out (when not nil) and returns the HTTP status.
func restJSONKey(t *testing.T, method, url, key, body string, out any) int {
	t.Helper()
	// Generous: a call that should answer and does not fails the test
	// instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil {
		require.NoError(t, json.Unmarshal(raw, out), "body: %s", raw)
	}
	return resp.StatusCode
}

// ndjson reads a newline-delimited JSON stream.
func ndjson(t *testing.T, url string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var lines []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		lines = append(lines, m)
	}
	require.NoError(t, sc.Err())
	return lines
}
