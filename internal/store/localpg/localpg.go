package localpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	defaultUser         = "postgres"
	defaultDatabase     = "wayfinder"
	defaultStartTimeout = 60 * time.Second

	superuser = "postgres" // role created by initdb -U; connections use it
	port      = 5432       // only names the socket file; there is no TCP listener

	leftoverStopTimeout = 30 * time.Second // SIGINT grace for a leftover server
	killWait            = 10 * time.Second // how long to wait after SIGKILL
	pollInterval        = 50 * time.Millisecond
	connectTimeout      = 2 * time.Second
	tailLines           = 30
)

// Options configures Start.
type Options struct {
	// DataDir is required. It holds the cluster (DataDir/pgdata), the Unix
	// socket directory (DataDir/run) and the server log
	// (DataDir/postgres.log). It is created with mode 0700 if missing
	// (missing parents get 0755).
	DataDir string

	// BinDir is the directory with the initdb and postgres binaries.
	// Default: the directory found by FindBinaries.
	BinDir string

	// User is the OS account that runs initdb and postgres when the current
	// process is root (PostgreSQL refuses to run as root). It is ignored
	// otherwise. Default: "postgres".
	User string

	// Database is created on start if it does not exist, and is the database
	// URL points at. Default: "wayfinder".
	Database string

	// Logger receives progress and warnings. Default: discard.
	Logger *slog.Logger

	// StartTimeout bounds how long Start waits for the server to accept
	// connections (not initdb). Default: 60s.
	StartTimeout time.Duration

	// Ephemeral is for test clusters: fsync, full_page_writes and
	// synchronous_commit are turned off (and initdb skips syncing) for speed,
	// so a crash of the machine can lose or corrupt data. Default: false.
	Ephemeral bool
}

// Server is a running PostgreSQL server started by Start. Its methods are
// safe for concurrent use.
type Server struct {
	logger   *slog.Logger
	sockDir  string
	database string
	logPath  string

	cmd  *exec.Cmd
	pid  int
	done chan struct{} // closed once cmd.Wait has returned
	// waitErr is cmd.Wait's result; written before done is closed.
	waitErr error

	interruptOnce sync.Once
}

// layout holds the paths Start manages under Options.DataDir.
type layout struct {
	dataDir string // absolute, symlinks resolved
	pgdata  string
	sockDir string
	logPath string
}

func newLayout(dataDir string) layout {
	return layout{
		dataDir: dataDir,
		pgdata:  filepath.Join(dataDir, "pgdata"),
		sockDir: filepath.Join(dataDir, "run"),
		logPath: filepath.Join(dataDir, "postgres.log"),
	}
}

// Start starts a PostgreSQL server on opts.DataDir, first creating the
// cluster with initdb if DataDir/pgdata holds none, and returns once the
// server accepts connections and opts.Database exists.
//
// A postgres still running on the same cluster (left behind by a process
// that died without calling Stop) is shut down first. ctx bounds only the
// startup; the server keeps running until Stop. Errors about the server
// failing to start include the tail of its log.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.DataDir == "" {
		return nil, errors.New("localpg: Options.DataDir is required")
	}
	if opts.User == "" {
		opts.User = defaultUser
	}
	if opts.Database == "" {
		opts.Database = defaultDatabase
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	logger := opts.Logger

	binDir := opts.BinDir
	if binDir == "" {
		var err error
		if binDir, err = FindBinaries(); err != nil {
			return nil, err
		}
	} else if err := checkBinDir(binDir); err != nil {
		return nil, fmt.Errorf("localpg: Options.BinDir: %w", err)
	}

	var run *runAs
	if os.Geteuid() == 0 {
		var err error
		if run, err = lookupRunAs(opts.User); err != nil {
			return nil, err
		}
	}

	l, err := prepareDirs(opts.DataDir, run)
	if err != nil {
		return nil, err
	}
	if sock := filepath.Join(l.sockDir, ".s.PGSQL."+strconv.Itoa(port)); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("localpg: socket path %s is %d bytes, longer than the system limit of %d; use a shorter Options.DataDir", sock, len(sock), maxSocketPath)
	}

	if err := ensureCluster(ctx, binDir, l, run, opts.Ephemeral, logger); err != nil {
		return nil, err
	}
	if err := stopLeftover(ctx, l.pgdata, logger); err != nil {
		return nil, err
	}

	s, logOffset, err := launch(binDir, l, run, opts, logger)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killWait)
		defer cancel()
		_ = s.Stop(stopCtx)
		return nil, err
	}

	began := time.Now()
	if err := s.waitReady(ctx, opts.StartTimeout, logOffset); err != nil {
		return fail(err)
	}
	logger.Info("localpg: postgres ready", "pid", s.pid, "socket_dir", l.sockDir, "took", time.Since(began).Round(time.Millisecond))

	if err := s.ensureDatabase(ctx); err != nil {
		return fail(err)
	}
	return s, nil
}

// prepareDirs creates DataDir and the socket directory, checks that the run
// user can reach them, and hands the managed files to the run user.
func prepareDirs(dataDir string, run *runAs) (layout, error) {
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return layout{}, fmt.Errorf("localpg: data dir: %w", err)
	}
	if err := mkdirParents(filepath.Dir(dataDir)); err != nil {
		return layout{}, err
	}
	if err := mkdirPrivate(dataDir); err != nil {
		return layout{}, err
	}
	if dataDir, err = filepath.EvalSymlinks(dataDir); err != nil {
		return layout{}, fmt.Errorf("localpg: data dir: %w", err)
	}
	l := newLayout(dataDir)
	if err := mkdirPrivate(l.sockDir); err != nil {
		return layout{}, err
	}
	// The socket directory is the access control (all local connections are
	// trusted), so enforce its mode even if it already existed.
	if err := os.Chmod(l.sockDir, 0o700); err != nil {
		return layout{}, fmt.Errorf("localpg: %w", err)
	}

	if run != nil {
		if err := checkTraversable(l.dataDir, run); err != nil {
			return layout{}, err
		}
		// Only what this package manages is chowned; anything else the
		// application keeps in DataDir is left alone.
		if err := os.Chown(l.dataDir, int(run.uid), int(run.gid)); err != nil {
			return layout{}, fmt.Errorf("localpg: chown %s to %s: %w", l.dataDir, run.name, err)
		}
		for _, p := range []string{l.sockDir, l.pgdata, l.logPath} {
			if err := chownTree(p, run); err != nil {
				return layout{}, err
			}
		}
	}
	return l, nil
}

// ensureCluster runs initdb unless pgdata already holds a cluster. initdb
// writes into a scratch directory that is renamed into place only on success,
// so an interrupted initdb never leaves a half-built cluster behind.
func ensureCluster(ctx context.Context, binDir string, l layout, run *runAs, ephemeral bool, logger *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(l.pgdata, "PG_VERSION")); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("localpg: %w", err)
	}
	// An empty pgdata (e.g. pre-created by an operator) is fine; anything else
	// without PG_VERSION is not ours to overwrite.
	if err := os.Remove(l.pgdata); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("localpg: %s exists but holds no PostgreSQL cluster (no PG_VERSION); move it away or choose another data dir: %w", l.pgdata, err)
	}

	scratch := l.pgdata + ".initdb"
	if err := os.RemoveAll(scratch); err != nil {
		return fmt.Errorf("localpg: remove leftover %s: %w", scratch, err)
	}

	args := []string{"-D", scratch, "-U", superuser, "--auth=trust", "--encoding=UTF8", "--locale=C"}
	if ephemeral {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), args...)
	cmd.Dir = l.dataDir
	cmd.SysProcAttr = sysProcAttr(run.credential())
	// initdb runs postgres in bootstrap mode as a child; take the whole
	// process group down if ctx is cancelled.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out

	logger.Info("localpg: initializing cluster", "pgdata", l.pgdata, "initdb", cmd.Path)
	began := time.Now()
	runErr := cmd.Run()
	appendLog(l.logPath, out.Bytes(), run)
	if runErr != nil {
		_ = os.RemoveAll(scratch)
		if ctx.Err() != nil {
			runErr = fmt.Errorf("%w (%w)", context.Cause(ctx), runErr)
		}
		return fmt.Errorf("localpg: initdb %s failed: %w; output:\n%s", l.pgdata, runErr, lastLines(out.Bytes(), tailLines))
	}
	if err := os.Rename(scratch, l.pgdata); err != nil {
		return fmt.Errorf("localpg: move new cluster into place: %w", err)
	}
	if !ephemeral {
		if err := syncDir(l.dataDir); err != nil {
			return err
		}
	}
	logger.Info("localpg: cluster initialized", "pgdata", l.pgdata, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// stopLeftover shuts down a postgres that still runs on pgdata, as named by
// its postmaster.pid: SIGINT (fast shutdown), then SIGKILL to its process
// group after leftoverStopTimeout. A stale pid file naming a dead or
// unrelated process is left for postgres to deal with.
func stopLeftover(ctx context.Context, pgdata string, logger *slog.Logger) error {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("localpg: read postmaster.pid: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return nil
	}
	if processGone(pid) {
		return nil
	}
	if !isClusterPostmaster(pid, pgdata) {
		logger.Warn("localpg: postmaster.pid names a live process that is not this cluster's postgres; leaving it alone", "pid", pid, "pgdata", pgdata)
		return nil
	}

	logger.Warn("localpg: stopping postgres left running by a previous process", "pid", pid, "pgdata", pgdata)
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("localpg: signal leftover postgres (pid %d): %w", pid, err)
	}
	if err := waitGone(ctx, pid, leftoverStopTimeout); err == nil {
		return nil
	} else if ctx.Err() != nil {
		return fmt.Errorf("localpg: waiting for leftover postgres (pid %d) to exit: %w", pid, err)
	}

	logger.Warn("localpg: leftover postgres ignored SIGINT; killing it", "pid", pid, "after", leftoverStopTimeout)
	// The servers this package starts lead their own process group, so this
	// also kills their backends; fall back to the pid alone otherwise.
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := waitGone(ctx, pid, killWait); err != nil {
		return fmt.Errorf("localpg: leftover postgres (pid %d) survived SIGKILL: %w", pid, err)
	}
	return nil
}

// waitGone polls until pid is gone, ctx ends or timeout passes.
func waitGone(ctx context.Context, pid int, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for !processGone(pid) {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline.C:
			return fmt.Errorf("pid %d still running after %s", pid, timeout)
		case <-tick.C:
		}
	}
	return nil
}

// launch starts the postgres process and the goroutine that waits for it. It
// returns the log size before the start, so errors can show just this run.
func launch(binDir string, l layout, run *runAs, opts Options, logger *slog.Logger) (*Server, int64, error) {
	logFile, err := os.OpenFile(l.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("localpg: open server log: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor
	var offset int64
	if fi, err := logFile.Stat(); err == nil {
		offset = fi.Size()
	}
	if run != nil {
		if err := logFile.Chown(int(run.uid), int(run.gid)); err != nil {
			return nil, 0, fmt.Errorf("localpg: chown server log: %w", err)
		}
	}

	args := []string{
		"-D", l.pgdata,
		"-k", l.sockDir,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=",
		"-c", "max_connections=200",
		"-c", "unix_socket_permissions=0700",
	}
	if opts.Ephemeral {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(filepath.Join(binDir, "postgres"), args...)
	cmd.Dir = l.dataDir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr(run.credential())
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("localpg: start %s: %w", cmd.Path, err)
	}

	s := &Server{
		logger:   logger,
		sockDir:  l.sockDir,
		database: opts.Database,
		logPath:  l.logPath,
		cmd:      cmd,
		pid:      cmd.Process.Pid,
		done:     make(chan struct{}),
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	logger.Info("localpg: postgres started", "pid", s.pid, "pgdata", l.pgdata, "ephemeral", opts.Ephemeral, "log", l.logPath)
	return s, offset, nil
}

// waitReady polls until the server answers SELECT 1, the process exits, ctx
// ends or timeout passes.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration, logOffset int64) error {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("postgres not ready within %s", timeout))
	defer cancel()
	cfg, err := pgx.ParseConfig(s.urlFor(superuser))
	if err != nil {
		return fmt.Errorf("localpg: parse connection string: %w", err)
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		lastErr := ping(ctx, cfg)
		if lastErr == nil {
			return nil
		}
		select {
		case <-s.done:
			cause := s.waitErr
			if cause == nil {
				cause = errors.New("exit status 0")
			}
			return fmt.Errorf("localpg: postgres exited during startup: %w; log %s:\n%s", cause, s.logPath, logTail(s.logPath, logOffset))
		case <-ctx.Done():
			return fmt.Errorf("localpg: %w (last error: %v); log %s:\n%s", context.Cause(ctx), lastErr, s.logPath, logTail(s.logPath, logOffset))
		case <-tick.C:
		}
	}
}

func ping(ctx context.Context, cfg *pgx.ConnConfig) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var one int
	return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// ensureDatabase creates s.database unless it exists.
func (s *Server) ensureDatabase(ctx context.Context) error {
	if s.database == superuser {
		return nil // the maintenance database always exists
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.urlFor(superuser))
	if err != nil {
		return fmt.Errorf("localpg: connect to create database %q: %w", s.database, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", s.database).Scan(&exists); err != nil {
		return fmt.Errorf("localpg: check for database %q: %w", s.database, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{s.database}.Sanitize())
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P04" { // duplicate_database
		err = nil
	}
	if err != nil {
		return fmt.Errorf("localpg: create database %q: %w", s.database, err)
	}
	s.logger.Info("localpg: created database", "database", s.database)
	return nil
}

// URL returns a pgx connection string for Options.Database over the server's
// Unix socket, e.g.
// "postgres://postgres@/wayfinder?host=/var/lib/wayfinder/run&port=5432&sslmode=disable".
func (s *Server) URL() string { return s.urlFor(s.database) }

func (s *Server) urlFor(database string) string {
	return "postgres://" + superuser + "@/" + uriEscape(database, false) +
		"?host=" + uriEscape(s.sockDir, true) + "&port=" + strconv.Itoa(port) + "&sslmode=disable"
}

// uriEscape percent-encodes everything but RFC 3986 unreserved characters
// (and '/' if keepSlash). pgx decodes connection URIs like libpq, which knows
// only percent-encoding ('+' stays a plus), so url.QueryEscape would be wrong.
func uriEscape(s string, keepSlash bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', keepSlash && c == '/':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// Stop shuts the server down with a fast shutdown (SIGINT: open sessions are
// disconnected, then a checkpoint is written) and waits for it to exit. If ctx
// ends first, the server's process group is killed with SIGKILL and Stop
// returns an error wrapping the context's cause.
//
// Stop is idempotent: later calls wait for the same exit and return nil, or
// the error describing an abnormal exit. A nil *Server is a no-op.
func (s *Server) Stop(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.interruptOnce.Do(func() {
		select {
		case <-s.done:
			return
		default:
		}
		s.logger.Info("localpg: stopping postgres", "pid", s.pid)
		if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			s.logger.Warn("localpg: signal postgres", "pid", s.pid, "err", err)
		}
	})
	select {
	case <-s.done:
		return exitErr(s.waitErr)
	case <-ctx.Done():
	}
	s.logger.Warn("localpg: postgres did not shut down in time; killing it", "pid", s.pid)
	// The server leads its own process group; killing the group takes the
	// backends with it. The group cannot be reused while any member lives.
	_ = syscall.Kill(-s.pid, syscall.SIGKILL)
	<-s.done
	return fmt.Errorf("localpg: postgres (pid %d) did not shut down in time and was killed: %w", s.pid, context.Cause(ctx))
}

func exitErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("localpg: postgres exited abnormally: %w", err)
}

// syncDir fsyncs a directory so a rename inside it is durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("localpg: sync %s: %w", dir, err)
	}
	return nil
}

// appendLog appends b to the server log, best effort.
func appendLog(path string, b []byte, run *runAs) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if run != nil {
		_ = f.Chown(int(run.uid), int(run.gid))
	}
	_, _ = f.Write(b)
}

// logTail returns the last lines written to the log at path after offset.
func logTail(path string, offset int64) string {
	const maxBytes = 16 << 10
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	start := max(offset, fi.Size()-maxBytes)
	b, err := io.ReadAll(io.NewSectionReader(f, start, fi.Size()-start))
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	if start > offset {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:] // drop the partial first line
		}
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "(log is empty)"
	}
	return lastLines(b, tailLines)
}

// lastLines returns at most n trailing lines of b.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
