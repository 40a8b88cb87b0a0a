// Package localpg runs a private, managed PostgreSQL server for Wayfinder.
//
// Wayfinder uses it when no DATABASE_URL is configured, and the test harness
// uses it to get a throwaway cluster. The package drives the system's
// PostgreSQL server binaries (initdb and postgres); it does not embed or
// download PostgreSQL. FindBinaries describes where they are looked for.
//
// # Layout
//
// Everything lives under Options.DataDir:
//
//	DataDir/pgdata        the cluster (created by initdb on first start)
//	DataDir/run           the Unix socket directory (mode 0700)
//	DataDir/postgres.log  postgres' stdout and stderr (appended to)
//
// The server listens only on the Unix socket in DataDir/run (listen_addresses
// is empty, so there is no TCP listener at all) and trusts every local
// connection; access control is the 0700 socket directory. URL returns a pgx
// connection string for the socket.
//
// # Running as root
//
// initdb and postgres refuse to run as root. When the current process is root,
// Start runs them as Options.User (default "postgres") through
// exec.Cmd.SysProcAttr.Credential, chowns the files it manages under DataDir
// to that user, and checks that every parent directory of DataDir is
// traversable by that user, failing with an explanatory error otherwise (for
// example when DataDir is under /root, which is usually 0700).
//
// # Lifecycle
//
// Start initializes the cluster if needed, starts postgres, waits until it
// answers queries and creates Options.Database if it does not exist. Stop
// performs a fast shutdown (SIGINT) and waits for the process to exit.
//
// On Linux the postgres process is started with a parent-death signal of
// SIGINT, so a crashed or killed Wayfinder process takes its database server
// down with it (a clean fast shutdown). If a previous server is nevertheless
// still running on the same DataDir (its pid is in pgdata/postmaster.pid and
// that process is a postgres running in that cluster), Start shuts it down
// before starting a new one.
//
// Options.Ephemeral turns off fsync, full_page_writes and synchronous_commit
// for speed; use it only for test clusters whose contents may be lost.
//
// # Example
//
//	srv, err := localpg.Start(ctx, localpg.Options{DataDir: "/var/lib/wayfinder"})
//	if err != nil {
//		return err
//	}
//	defer srv.Stop(context.Background())
//	pool, err := pgxpool.New(ctx, srv.URL())
package localpg
