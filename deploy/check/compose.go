package check

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// ComposeEnv are the variables deploy/compose.yaml requires, with test
// values (it refuses to start without them).
var ComposeEnv = []string{
	"WAYFINDER_ADMIN_KEY=0123456789abcdef0123456789abcdef",
	"WAYFINDER_ENCRYPTION_KEYS=k1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
	"POSTGRES_PASSWORD=test",
}

// LoadCompose loads a Compose file as `docker compose` does, validating it
// against the Compose specification's schema, with env as the environment.
func LoadCompose(ctx context.Context, path string, env []string) (*types.Project, error) {
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)), cli.WithEnv(env), cli.WithName("wayfinder"))
	if err != nil {
		return nil, err
	}
	return opts.LoadProject(ctx)
}

// CheckCompose checks the services of deploy/compose.yaml: a Postgres with
// a health check that both roles wait for, images built from the
// repository's Dockerfile, the secrets passed in, the drain covered.
func CheckCompose(p *types.Project) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	pg, ok := p.Services["postgres"]
	if !ok {
		fail("no postgres service")
	} else if pg.HealthCheck == nil || len(pg.HealthCheck.Test) == 0 {
		fail("postgres: no healthcheck (the server's depends_on waits for it)")
	}
	roles := map[string]bool{}
	for _, name := range []string{"api", "worker"} {
		s, ok := p.Services[name]
		if !ok {
			fail("no %s service", name)
			continue
		}
		env := func(k string) string {
			if v := s.Environment[k]; v != nil {
				return *v
			}
			return ""
		}
		roles[env("WAYFINDER_ROLE")] = true
		if env("WAYFINDER_ROLE") != name {
			fail("%s: WAYFINDER_ROLE=%q, want %s", name, env("WAYFINDER_ROLE"), name)
		}
		if s.Build == nil {
			fail("%s: no build", name)
		} else if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
			fail("%s: build %s/%s: %v", name, s.Build.Context, s.Build.Dockerfile, err)
		}
		if d, ok := s.DependsOn["postgres"]; !ok || d.Condition != types.ServiceConditionHealthy {
			fail("%s: must depend on postgres with condition service_healthy", name)
		}
		u, err := url.Parse(env("DATABASE_URL"))
		if err != nil || u.Hostname() != "postgres" {
			fail("%s: DATABASE_URL must point at the postgres service", name)
		}
		for _, k := range []string{"WAYFINDER_ADMIN_KEY", "WAYFINDER_ENCRYPTION_KEYS"} {
			if env(k) == "" {
				fail("%s: %s is not set", name, k)
			}
		}
		shutdown := 30 * time.Second
		if v := env("WAYFINDER_SHUTDOWN_TIMEOUT"); v != "" {
			if shutdown, err = time.ParseDuration(v); err != nil {
				fail("%s: WAYFINDER_SHUTDOWN_TIMEOUT: %v", name, err)
			}
		}
		grace := 10 * time.Second // Docker's default
		if s.StopGracePeriod != nil {
			grace = time.Duration(*s.StopGracePeriod)
		}
		if need := shutdown + queueStop + httpStop; grace < need {
			fail("%s: stop_grace_period %s < shutdown timeout %s + queue stop %s + HTTP stop %s", name, grace, shutdown, queueStop, httpStop)
		}
	}
	if api, ok := p.Services["api"]; ok && len(api.Ports) == 0 {
		fail("api: publishes no port")
	}
	return errs
}
