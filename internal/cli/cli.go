package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// Exit codes; the table is in the package documentation.
const (
	exitOK        = 0
	exitFailed    = 1
	exitMaxSteps  = 2
	exitError     = 3
	exitCancelled = 4
	exitUsage     = 5
	exitApproval  = 6
	exitTimeout   = 7
	exitInterrupt = 130
)

// defaultCallTimeout bounds each unary call when --timeout is not given.
const defaultCallTimeout = 30 * time.Second

// Env is what the commands read from and write to.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads WAYFINDER_ADDR and WAYFINDER_API_KEY.
	Getenv func(string) string
	// Terminal reports that Stdout is a terminal: run --follow then keeps
	// a live progress line.
	Terminal bool
}

// OSEnv is the process's environment.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Terminal: isTTY(os.Stdout)}
}

// isTTY reports whether f is a character device (a terminal, not a
// pipe or a file).
func isTTY(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// command is one client command.
type command struct {
	name  string
	usage string // after "wayfinder "
	about string
	run   func(ctx context.Context, s *session, args []string) (int, error)
}

// commands are the top-level client commands; "runs" and "media" have
// subcommands of their own.
var commands = []command{
	{"run", "run --goal GOAL --url URL [flags]", "create a run; --follow watches it to the end", runCmd},
	{"runs", "runs list|get|cancel|events|steps", "list, inspect and cancel runs", runsCmd},
	{"approve", "approve RUN_ID [--reject] [--message TEXT]", "answer a run's human checkpoint", approveCmd},
	{"media", "media get MEDIA_ID -o FILE", "download a screenshot", mediaCmd},
	{"test", "test run|get|runs|list|export", "run test suites (CI: exit code, JUnit) and see their history", testCmd},
	{"traces", "traces list|get|pin|unpin|delete|export", "list, inspect, pin and export replayable traces", tracesCmd},
}

// IsCommand reports whether name is a client command (the server's own
// commands are not).
func IsCommand(name string) bool {
	for _, c := range commands {
		if c.name == name {
			return true
		}
	}
	return false
}

// Main runs the client command args[0] with the rest of args and returns
// the process exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	if len(args) == 0 || !IsCommand(args[0]) {
		fmt.Fprintln(env.Stderr, "wayfinder: unknown client command; try wayfinder run, runs, approve, media, test or traces")
		return exitUsage
	}
	var cmd command
	for _, c := range commands {
		if c.name == args[0] {
			cmd = c
		}
	}
	s := &session{env: env, prefix: "wayfinder " + cmd.name}
	defer s.close()
	code, err := cmd.run(ctx, s, args[1:])
	if err != nil {
		return s.fail(ctx, err)
	}
	return code
}

// session holds a command's global options and its connection.
type session struct {
	env    Env
	prefix string // "wayfinder runs get": the start of error lines

	addr     string
	apiKey   string
	useTLS   bool
	insecure bool
	json     bool
	timeout  time.Duration

	usage func() // prints the command's usage

	conn *grpc.ClientConn
	runs wfv1.RunServiceClient

	// reconnectFor is how long a followed stream is retried without
	// progress before the command gives up. Default 60s.
	reconnectFor time.Duration
}

// flags returns a flag set with the global options registered on it.
func (s *session) flags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&s.addr, "addr", "", "gRPC address of the server (env WAYFINDER_ADDR; default 127.0.0.1:9090)")
	fs.StringVar(&s.apiKey, "api-key", "", "API key (prefer env WAYFINDER_API_KEY: other users can see a process's flags)")
	fs.BoolVar(&s.useTLS, "tls", false, "use TLS with the system's roots (default for non-loopback addresses)")
	fs.BoolVar(&s.insecure, "insecure", false, "use plaintext (default for loopback addresses)")
	fs.BoolVar(&s.json, "json", false, "print JSON (protobuf JSON, proto field names) on stdout")
	fs.DurationVar(&s.timeout, "timeout", 0, "limit for each call (default 30s); with --follow, for the whole wait (default none)")
	// The flag package calls Usage on every parse error too; parse prints
	// the usage only when asked (-h) and a one-line error otherwise.
	fs.Usage = func() {}
	s.usage = func() {
		fmt.Fprintf(s.env.Stderr, "usage: wayfinder %s\n\nflags:\n", usage)
		fs.SetOutput(s.env.Stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse parses args into fs, allowing flags after positional arguments
// ("runs get ID --json"). It returns the positional arguments.
func (s *session) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				s.usage()
				return nil, errHelp
			}
			return nil, usageErrorf("%v (see %s -h)", err, s.prefix)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			pos = append(pos, args[1:]...)
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if s.addr == "" {
		s.addr = s.env.Getenv("WAYFINDER_ADDR")
	}
	if s.addr == "" {
		s.addr = "127.0.0.1:9090"
	}
	if s.apiKey == "" {
		s.apiKey = s.env.Getenv("WAYFINDER_API_KEY")
	}
	s.apiKey = strings.TrimSpace(s.apiKey)
	if s.useTLS && s.insecure {
		return nil, usageErrorf("--tls and --insecure exclude each other")
	}
	if s.timeout < 0 {
		return nil, usageErrorf("--timeout must not be negative")
	}
	return pos, nil
}

// connect dials the server (lazily: the first call connects).
func (s *session) connect() error {
	if s.runs != nil {
		return nil
	}
	useTLS := s.useTLS || (!s.insecure && !isLoopback(s.addr))
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithUserAgent("wayfinder-cli"),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256 << 20)),
		// A watch can sit idle for hours (a run waiting for approval);
		// pings find a connection that a proxy dropped silently, and
		// follow resumes. gRPC servers refuse pings more often than every
		// 5 minutes by default.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 6 * time.Minute, Timeout: 20 * time.Second}),
	}
	if s.apiKey != "" {
		if !useTLS && !isLoopback(s.addr) {
			fmt.Fprintf(s.env.Stderr, "%s: warning: sending the API key without TLS to %s\n", s.prefix, s.addr)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{key: s.apiKey, secure: useTLS}))
	}
	conn, err := grpc.NewClient(s.addr, opts...)
	if err != nil {
		return usageErrorf("bad --addr %q: %v", s.addr, err)
	}
	s.conn, s.runs = conn, wfv1.NewRunServiceClient(conn)
	return nil
}

func (s *session) close() {
	if s.conn != nil {
		_ = s.conn.Close()
	}
}

// call returns the context of one unary call.
func (s *session) call(ctx context.Context) (context.Context, context.CancelFunc) {
	d := s.timeout
	if d == 0 {
		d = defaultCallTimeout
	}
	return context.WithTimeout(ctx, d)
}

// isLoopback reports whether addr names this machine: a loopback IP,
// "localhost" or a unix socket.
func isLoopback(addr string) bool {
	if strings.HasPrefix(addr, "unix:") || strings.HasPrefix(addr, "unix-abstract:") {
		return true
	}
	addr = strings.TrimPrefix(addr, "dns:///")
	addr = strings.TrimPrefix(addr, "passthrough:///")
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bearer sends the API key as "authorization: Bearer <key>" on every call.
type bearer struct {
	key    string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.key}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }
