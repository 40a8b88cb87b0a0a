package localpg

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// writeFakeBinaries creates executable initdb and postgres stubs in dir.
func writeFakeBinaries(t *testing.T, dir string, names ...string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	if len(names) == 0 {
		names = []string{"initdb", "postgres"}
	}
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	}
}

func TestFindBinaries(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		// setup populates root and returns the search (paths relative to
		// root are filled in by the test) and the expected directory ("" =
		// ErrNoBinaries).
		setup   func(t *testing.T, root string) binSearch
		want    string // relative to root
		wantErr []string
	}{
		{
			name:  "nothing installed",
			setup: func(t *testing.T, root string) binSearch { return binSearch{} },
			wantErr: []string{
				"initdb, postgres) not found",
				"apt-get install postgresql",
				"brew install postgresql@16",
				"set WAYFINDER_PG_BIN to the directory holding initdb and postgres",
				"or set DATABASE_URL to use an existing database",
			},
		},
		{
			name: "only initdb on PATH",
			setup: func(t *testing.T, root string) binSearch {
				writeFakeBinaries(t, filepath.Join(root, "path"), "initdb")
				return binSearch{}
			},
			wantErr: []string{"not found", "searched PATH"},
		},
		{
			name: "both on PATH",
			setup: func(t *testing.T, root string) binSearch {
				writeFakeBinaries(t, filepath.Join(root, "path"))
				writeFakeBinaries(t, filepath.Join(root, "lib/postgresql/17/bin"))
				return binSearch{}
			},
			want: "path",
		},
		{
			name: "PATH symlinks resolve to one dir",
			setup: func(t *testing.T, root string) binSearch {
				real := filepath.Join(root, "lib/postgresql/15/bin")
				writeFakeBinaries(t, real)
				for _, n := range []string{"initdb", "postgres"} {
					require.NoError(t, os.Symlink(filepath.Join(real, n), filepath.Join(root, "path", n)))
				}
				return binSearch{}
			},
			want: "lib/postgresql/15/bin",
		},
		{
			name: "PATH symlinks resolve to different dirs",
			setup: func(t *testing.T, root string) binSearch {
				writeFakeBinaries(t, filepath.Join(root, "a"), "initdb")
				writeFakeBinaries(t, filepath.Join(root, "b"), "postgres")
				require.NoError(t, os.Symlink(filepath.Join(root, "a/initdb"), filepath.Join(root, "path/initdb")))
				require.NoError(t, os.Symlink(filepath.Join(root, "b/postgres"), filepath.Join(root, "path/postgres")))
				writeFakeBinaries(t, filepath.Join(root, "lib/postgresql/13/bin"))
				return binSearch{}
			},
			want: "lib/postgresql/13/bin",
		},
		{
			name: "highest version wins numerically",
			setup: func(t *testing.T, root string) binSearch {
				writeFakeBinaries(t, filepath.Join(root, "lib/postgresql/9.6/bin"))
				writeFakeBinaries(t, filepath.Join(root, "lib/postgresql/16/bin"))
				writeFakeBinaries(t, filepath.Join(root, "lib/postgresql/10/bin"))
				writeFakeBinaries(t, filepath.Join(root, "lib/postgresql/18/bin"), "initdb") // incomplete
				writeFakeBinaries(t, filepath.Join(root, "fallback"))
				return binSearch{}
			},
			want: "lib/postgresql/16/bin",
		},
		{
			name: "fallback dir",
			setup: func(t *testing.T, root string) binSearch {
				writeFakeBinaries(t, filepath.Join(root, "fallback"))
				return binSearch{}
			},
			want: "fallback",
		},
		{
			name: "WAYFINDER_PG_BIN wins",
			setup: func(t *testing.T, root string) binSearch {
				writeFakeBinaries(t, filepath.Join(root, "env"))
				writeFakeBinaries(t, filepath.Join(root, "path"))
				return binSearch{envDir: filepath.Join(root, "env")}
			},
			want: "env",
		},
		{
			name: "WAYFINDER_PG_BIN without binaries is an error",
			setup: func(t *testing.T, root string) binSearch {
				writeFakeBinaries(t, filepath.Join(root, "env"), "postgres")
				writeFakeBinaries(t, filepath.Join(root, "path"))
				return binSearch{envDir: filepath.Join(root, "env")}
			},
			wantErr: []string{"WAYFINDER_PG_BIN=", "no executable initdb", "apt-get install postgresql"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(root, "path"), 0o755))
			b := tt.setup(t, root)
			b.path = filepath.Join(root, "path") + string(os.PathListSeparator) // empty entry must be ignored
			b.versionedGlobs = []string{filepath.Join(root, "lib/postgresql/*/bin")}
			b.fallbackDirs = []string{filepath.Join(root, "fallback")}

			dir, err := b.find()
			if tt.wantErr != nil {
				require.ErrorIs(t, err, ErrNoBinaries)
				require.Empty(t, dir)
				for _, s := range tt.wantErr {
					require.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, filepath.Join(root, tt.want), dir)
		})
	}
}

func TestGlobVersion(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		pattern, path string
		want          []int
		ok            bool
	}{
		{"/usr/lib/postgresql/*/bin", "/usr/lib/postgresql/15/bin", []int{15}, true},
		{"/usr/lib/postgresql/*/bin", "/usr/lib/postgresql/9.6/bin", []int{9, 6}, true},
		{"/opt/homebrew/opt/postgresql@*/bin", "/opt/homebrew/opt/postgresql@16/bin", []int{16}, true},
		{"/usr/lib/postgresql/*/bin", "/usr/lib/postgresql/beta/bin", nil, false},
		{"/usr/lib/postgresql/*/bin", "/elsewhere/15/bin", nil, false},
	} {
		got, ok := globVersion(tt.pattern, tt.path)
		require.Equal(t, tt.ok, ok, tt.path)
		require.Equal(t, tt.want, got, tt.path)
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	s := &Server{sockDir: "/var/lib/way finder/run", database: "wayfinder"}
	require.Equal(t, "postgres://postgres@/wayfinder?host=/var/lib/way%20finder/run&port=5432&sslmode=disable", s.URL())

	cfg, err := pgx.ParseConfig(s.URL())
	require.NoError(t, err)
	require.Equal(t, "/var/lib/way finder/run", cfg.Host)
	require.Equal(t, uint16(5432), cfg.Port)
	require.Equal(t, "postgres", cfg.User)
	require.Equal(t, "wayfinder", cfg.Database)
	require.Nil(t, cfg.TLSConfig)

	for _, name := range []string{"odd db/name", "a+b?c&d=e", `wf "quoted" ü`} {
		s.database = name
		cfg, err = pgx.ParseConfig(s.URL())
		require.NoError(t, err, s.URL())
		require.Equal(t, name, cfg.Database)
	}
}

// testDataDir returns a DataDir whose parents are traversable by the postgres
// user when the tests run as root (t.TempDir's parent is 0700).
func testDataDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "localpg-test-*")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	require.NoError(t, os.Chmod(parent, 0o755))
	return filepath.Join(parent, "data")
}

// requireBinaries skips the test when no PostgreSQL is installed.
func requireBinaries(t *testing.T) string {
	t.Helper()
	dir, err := FindBinaries()
	if errors.Is(err, ErrNoBinaries) {
		t.Skip(err)
	}
	require.NoError(t, err)
	return dir
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startServer starts a server and registers a Stop for the end of the test.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	s, err := Start(ctx, opts)
	require.NoError(t, err)
	t.Logf("Start took %s", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
	return s
}

func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "postgres pid %d still exists", pid)
}

func TestStartRestartKeepsData(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := t.Context()
	opts := Options{DataDir: testDataDir(t), Logger: testLogger(t)} // production settings: fsync on

	s := startServer(t, opts)
	require.Contains(t, s.URL(), "postgres://postgres@/wayfinder?host="+opts.DataDir)

	conn, err := pgx.Connect(ctx, s.URL())
	require.NoError(t, err)
	var db, fsync string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_database(), current_setting('fsync')").Scan(&db, &fsync))
	require.Equal(t, "wayfinder", db)
	require.Equal(t, "on", fsync)
	var listen string
	require.NoError(t, conn.QueryRow(ctx, "SHOW listen_addresses").Scan(&listen))
	require.Empty(t, listen)
	_, err = conn.Exec(ctx, "CREATE TABLE survivors (id int PRIMARY KEY, name text); INSERT INTO survivors VALUES (1, 'kept')")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	// Layout and permissions.
	for _, p := range []string{opts.DataDir, filepath.Join(opts.DataDir, "run"), filepath.Join(opts.DataDir, "pgdata")} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), p)
		if os.Geteuid() == 0 {
			require.NotEqual(t, uint32(0), fi.Sys().(*syscall.Stat_t).Uid, "%s should belong to the run user", p)
		}
	}
	require.NoDirExists(t, filepath.Join(opts.DataDir, "pgdata.initdb"))

	pid := s.pid
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, s.Stop(stopCtx))
	requireGone(t, pid)
	require.NoError(t, s.Stop(stopCtx), "Stop is idempotent")
	require.NoFileExists(t, filepath.Join(opts.DataDir, "pgdata", "postmaster.pid"))

	s2 := startServer(t, opts)
	require.NotEqual(t, pid, s2.pid)
	conn, err = pgx.Connect(ctx, s2.URL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var name string
	require.NoError(t, conn.QueryRow(ctx, "SELECT name FROM survivors WHERE id = 1").Scan(&name))
	require.Equal(t, "kept", name)
}

func TestStartStopsLeftoverServer(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	ctx := t.Context()
	opts := Options{DataDir: testDataDir(t), Logger: testLogger(t), Ephemeral: true, Database: `wf "stale" test`}

	// First server: "crash" by forgetting it (no Stop). Its Wait goroutine
	// keeps running until the process exits.
	first, err := Start(ctx, opts)
	require.NoError(t, err)

	second := startServer(t, opts)
	select {
	case <-first.done:
	case <-time.After(30 * time.Second):
		t.Fatal("leftover postgres still running")
	}
	requireGone(t, first.pid)
	require.NoError(t, first.Stop(ctx), "the leftover shut down cleanly")

	conn, err := pgx.Connect(ctx, second.URL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var db, fsync, fpw, syncCommit string
	require.NoError(t, conn.QueryRow(ctx,
		"SELECT current_database(), current_setting('fsync'), current_setting('full_page_writes'), current_setting('synchronous_commit')").
		Scan(&db, &fsync, &fpw, &syncCommit))
	require.Equal(t, opts.Database, db)
	require.Equal(t, []string{"off", "off", "off"}, []string{fsync, fpw, syncCommit})
}

func TestStopKillsOnDeadline(t *testing.T) {
	t.Parallel()
	requireBinaries(t)
	s, err := Start(t.Context(), Options{DataDir: testDataDir(t), Ephemeral: true})
	require.NoError(t, err)

	// An already expired context: Stop must SIGKILL the process group and
	// still reap the process before returning.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, s.Stop(ctx), context.Canceled)
	requireGone(t, s.pid)

	// Later calls return at once (reporting how the process ended).
	done := make(chan struct{})
	go func() {
		_ = s.Stop(context.Background())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("second Stop hangs")
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()

	t.Run("no data dir", func(t *testing.T) {
		t.Parallel()
		_, err := Start(t.Context(), Options{})
		require.ErrorContains(t, err, "DataDir is required")
	})

	t.Run("bad bin dir", func(t *testing.T) {
		t.Parallel()
		_, err := Start(t.Context(), Options{DataDir: testDataDir(t), BinDir: t.TempDir()})
		require.ErrorIs(t, err, ErrNoBinaries)
	})

	t.Run("parent not traversable by run user", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("only meaningful as root")
		}
		binDir := requireBinaries(t)
		private := filepath.Join(filepath.Dir(testDataDir(t)), "private")
		require.NoError(t, os.Mkdir(private, 0o700))
		_, err := Start(t.Context(), Options{DataDir: filepath.Join(private, "data"), BinDir: binDir})
		require.ErrorContains(t, err, "directory "+private+" (mode -rwx------) is not traversable by user \"postgres\"")
		require.ErrorContains(t, err, "/var/lib/wayfinder")
	})

	t.Run("unknown run user", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("only meaningful as root")
		}
		binDir := requireBinaries(t)
		_, err := Start(t.Context(), Options{DataDir: testDataDir(t), BinDir: binDir, User: "no-such-user-localpg"})
		require.ErrorContains(t, err, `look up user "no-such-user-localpg"`)
	})

	t.Run("postgres fails to start shows log", func(t *testing.T) {
		t.Parallel()
		binDir := requireBinaries(t)
		dataDir := testDataDir(t)
		opts := Options{DataDir: dataDir, BinDir: binDir, Ephemeral: true, StartTimeout: 30 * time.Second}
		s := startServer(t, opts)
		// Break the configuration, then restart.
		require.NoError(t, s.Stop(t.Context()))
		conf := filepath.Join(dataDir, "pgdata", "postgresql.auto.conf")
		require.NoError(t, os.WriteFile(conf, []byte("shared_buffers = 'lots'\n"), 0o600))
		_, err := Start(t.Context(), opts)
		t.Log(err)
		require.ErrorContains(t, err, "postgres exited during startup")
		require.ErrorContains(t, err, "shared_buffers")
	})
}
