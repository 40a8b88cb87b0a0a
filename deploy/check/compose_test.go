package check

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const composeFile = "../compose.yaml"

func checkComposeFile(t *testing.T, path string, env []string) error {
	t.Helper()
	p, err := LoadCompose(context.Background(), path, env)
	if err != nil {
		return err
	}
	return errors.Join(CheckCompose(p)...)
}

func TestCompose(t *testing.T) {
	if err := checkComposeFile(t, composeFile, ComposeEnv); err != nil {
		t.Fatal(err)
	}
}

func TestComposeChecksCatchBrokenCopies(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
		env                  []string
	}{
		{"unknown key", "    mem_limit: 2g", "    mem_limit: 2g\n    bogus: 1", "bogus", nil},
		{"wrong type", "    mem_limit: 2g", "    mem_limit: [2g]", "mem_limit", nil},
		{"missing secret", "", "", "WAYFINDER_ADMIN_KEY", ComposeEnv[1:]},
		{"no healthy wait", "      condition: service_healthy", "      condition: service_started", "condition service_healthy", nil},
		{"short grace", "stop_grace_period: 75s", "stop_grace_period: 20s", "stop_grace_period 20s", nil},
		{"wrong role", "      WAYFINDER_ROLE: worker", "      WAYFINDER_ROLE: all", "WAYFINDER_ROLE=\"all\"", nil},
		{"database elsewhere", "@postgres:5432", "@localhost:5432", "DATABASE_URL", nil},
		{"no pg healthcheck", "    healthcheck:\n      test:", "    x-healthcheck:\n      test:", "healthcheck", nil},
		{"no dockerfile", "dockerfile: Dockerfile", "dockerfile: Dockerfile.missing", "Dockerfile.missing", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(composeFile)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			if tc.old != "" {
				if !strings.Contains(src, tc.old) {
					t.Fatalf("%s does not contain %q", composeFile, tc.old)
				}
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
			// Beside the original, so the build context resolves the same.
			dir := filepath.Join("..", ".check-"+strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			p := filepath.Join(dir, "compose.yaml")
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			env := ComposeEnv
			if tc.env != nil {
				env = tc.env
			}
			err = checkComposeFile(t, p, env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check = %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
