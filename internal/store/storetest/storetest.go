// Package storetest gives tests a real, migrated Postgres database each.
//
// A test binary starts one managed local Postgres (the same mechanism the
// server uses when no DATABASE_URL is set) on first use, migrates a template
// database once, and clones it for every test, so each test gets an empty,
// isolated schema in a few tens of milliseconds. When
// WAYFINDER_TEST_DATABASE_URL names a server, that server is used instead.
// A missing Postgres is a test failure, never a skip.
package storetest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/localpg"
)

const template = "wayfinder_test_template"

// cluster is the test binary's shared Postgres, started once.
type cluster struct {
	once   sync.Once
	server *localpg.Server
	dir    string
	admin  string // URL of the maintenance database
	err    error
}

var shared cluster

// Main runs the tests of a package that uses NewDB and stops the shared
// Postgres afterwards. Call it from TestMain.
func Main(m interface{ Run() int }) {
	os.Exit(Run(m))
}

// Run is Main without the exit: it returns the tests' exit code once the
// shared Postgres has stopped, for a TestMain that checks more (leaked
// goroutines) afterwards.
func Run(m interface{ Run() int }) int {
	code := m.Run()
	if shared.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = shared.server.Stop(ctx)
		cancel()
		_ = os.RemoveAll(shared.dir)
	}
	return code
}

func (c *cluster) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if url := os.Getenv("WAYFINDER_TEST_DATABASE_URL"); url != "" {
		c.admin = url
	} else {
		dir, err := os.MkdirTemp("", "wayfinder-testpg-")
		if err != nil {
			return err
		}
		// The managed Postgres may run as another user (when tests run as
		// root); it must be able to reach its data dir.
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		c.dir = dir
		c.server, err = localpg.Start(ctx, localpg.Options{DataDir: dir + "/pg", Ephemeral: true, Database: "postgres"})
		if err != nil {
			return fmt.Errorf("start test postgres: %w", err)
		}
		c.admin = c.server.URL()
	}
	conn, err := pgx.Connect(ctx, c.admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	name := pgx.Identifier{template}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return err
	}
	pool, err := store.Connect(ctx, withDatabase(c.admin, template))
	if err != nil {
		return err
	}
	defer pool.Close()
	return store.Migrate(ctx, pool, slog.New(slog.DiscardHandler))
}

// withDatabase returns url with its database name replaced.
func withDatabase(url, db string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		panic(err)
	}
	cfg.Database = db
	// Rebuild as a keyword/value string, which pgx accepts and which keeps
	// socket directories intact.
	parts := []string{"host=" + cfg.Host, fmt.Sprintf("port=%d", cfg.Port), "user=" + cfg.User, "dbname=" + db, "sslmode=disable"}
	if cfg.Password != "" {
		parts = append(parts, "password="+cfg.Password)
	}
	return strings.Join(parts, " ")
}

// NewDB creates an empty, migrated database for t, drops it when t ends,
// and returns its connection URL.
func NewDB(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() { shared.err = shared.start() })
	if shared.err != nil {
		t.Fatalf("test database: %v", shared.err)
	}
	ctx := context.Background()
	name := "wf_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	conn, err := pgx.Connect(ctx, shared.admin)
	if err != nil {
		t.Fatalf("connect to test postgres: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize())); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, shared.admin)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return withDatabase(shared.admin, name)
}

// NewPool returns a connection pool to a new test database.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := store.Connect(context.Background(), NewDB(t))
	if err != nil {
		t.Fatalf("connect to test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
