package check

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	repoRoot     = "../.."
	dockerfile   = "../../Dockerfile"
	dockerignore = "../../.dockerignore"
)

// stampedMakefile is a Makefile whose build stamps the version as the
// image does (deploy/README.md asks `make build` for the same flags).
const stampedMakefile = `GO ?= go
BIN := bin/wayfinder
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X github.com/wayfinder/wayfinder/internal/version.Version=$(VERSION) -X github.com/wayfinder/wayfinder/internal/version.Commit=$(COMMIT) -X github.com/wayfinder/wayfinder/internal/version.Date=$(DATE)
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/wayfinder
`

func readDockerfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkDockerfileWith parses src and checks it against the build of the
// Makefile in makeDir.
func checkDockerfileWith(t *testing.T, src, makeDir string) []error {
	t.Helper()
	df, err := ParseDockerfile([]byte(src))
	if err != nil {
		return []error{err}
	}
	mk, err := MakeBuild(makeDir)
	if err != nil {
		return []error{err}
	}
	return CheckDockerfile(df, mk)
}

func writeMakefile(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDockerfile checks the Dockerfile against the repository's Makefile.
func TestDockerfile(t *testing.T) {
	for _, err := range checkDockerfileWith(t, readDockerfile(t), repoRoot) {
		t.Error(err)
	}
}

func TestDockerfileChecksCatchBrokenCopies(t *testing.T) {
	good := writeMakefile(t, stampedMakefile)
	if errs := checkDockerfileWith(t, readDockerfile(t), good); len(errs) > 0 {
		t.Fatalf("the Dockerfile fails beside a stamping Makefile: %v", errs)
	}
	for _, tc := range []struct {
		name, old, new, makefile, want string
	}{
		{"one stage", "FROM golang:1.26-bookworm AS build", "FROM debian:bookworm-slim AS build", "", "build stage FROM debian:bookworm-slim"},
		{"runtime base", "FROM debian:bookworm-slim\n", "FROM debian:bookworm\n", "", "runtime stage FROM debian:bookworm"},
		{"root user", "USER 10001:10001", "USER 0", "", "numeric non-root"},
		{"named user", "USER 10001:10001", "USER wayfinder", "", "numeric non-root"},
		{"no user", "USER 10001:10001\n", "", "", "no USER"},
		{"shell healthcheck", `CMD ["wayfinder", "health"]`, `CMD wayfinder health`, "", "HEALTHCHECK"},
		{"no healthcheck", "HEALTHCHECK", "# HEALTHCHECK", "", "no HEALTHCHECK"},
		{"no tini", `ENTRYPOINT ["/usr/bin/tini", "--", "wayfinder"]`, `ENTRYPOINT ["wayfinder"]`, "", "ENTRYPOINT"},
		{"shell entrypoint", `ENTRYPOINT ["/usr/bin/tini", "--", "wayfinder"]`, `ENTRYPOINT /usr/bin/tini -- wayfinder`, "", "ENTRYPOINT"},
		{"no trimpath", "go build -trimpath", "go build", "", "differs from make build"},
		{"extra flag", "go build -trimpath", "go build -trimpath -race", "", "differs from make build"},
		{"other package", "./cmd/wayfinder\n", "./cmd/wfbench\n", "", "differs from make build"},
		{"no commit stamp", " -X github.com/wayfinder/wayfinder/internal/version.Commit=${COMMIT}", "", "", "does not set github.com/wayfinder/wayfinder/internal/version.Commit"},
		{"no tini package", " tini \\", " \\", "", "does not install tini"},
		{"no chromium", "chromium fonts-liberation", "fonts-liberation", "", "does not install chromium"},
		{"lint: casing", "AS build", "as build", "", "FromAsCasing"},
		{"lint: stage casing", "AS build", "AS Build", "", "StageNameCasing"},
		{"undefined arg", "Version=${VERSION}", "Version=${VERSON}", "", "to nothing"},
		{"makefile unstamped", "", "", "GO ?= go\nbuild:\n\t$(GO) build -trimpath -o bin/wayfinder ./cmd/wayfinder\n", "make build does not set"},
		{"makefile stamps more", "", "", strings.Replace(stampedMakefile, "LDFLAGS := ", "LDFLAGS := -X main.extra=1 ", 1), "the image does not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := readDockerfile(t)
			if tc.old != "" {
				if !strings.Contains(src, tc.old) {
					t.Fatalf("the Dockerfile does not contain %q", tc.old)
				}
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
			dir := good
			if tc.makefile != "" {
				dir = writeMakefile(t, tc.makefile)
			}
			errs := checkDockerfileWith(t, src, dir)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("errors %v\nwant one containing %q", errs, tc.want)
		})
	}
}

// TestRuntimePackagesInstallable asks apt which of the runtime stage's
// packages Debian bookworm has (the image cannot be built here: no Docker
// daemon, no registry).
func TestRuntimePackagesInstallable(t *testing.T) {
	osr, err := os.ReadFile("/etc/os-release")
	if err != nil || !strings.Contains(string(osr), "VERSION_CODENAME=bookworm") {
		t.Skip("not Debian bookworm: apt here cannot speak for the image's packages")
	}
	df, err := ParseDockerfile([]byte(readDockerfile(t)))
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, c := range df.Stages[len(df.Stages)-1].Commands {
		if r, ok := c.(interface{ String() string }); ok {
			pkgs = append(pkgs, AptPackages(r.String())...)
		}
	}
	if len(pkgs) < len(RuntimePackages) {
		t.Fatalf("runtime packages %v: fewer than %v", pkgs, RuntimePackages)
	}
	for _, p := range pkgs {
		out, err := exec.Command("apt-cache", "show", "--no-all-versions", p).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Package: "+p) {
			t.Errorf("apt-cache show %s: %v: %s (after apt-get update?)", p, err, out)
		}
	}
}

// TestDockerignore: the build context holds the sources the build needs
// and none of the binaries, tools, data or history.
func TestDockerignore(t *testing.T) {
	f, err := os.Open(dockerignore)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ignored := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			ignored[strings.TrimPrefix(l, "/")] = true
		}
	}
	for _, p := range []string{".git", "bin", ".tools", ".wayfinder"} {
		if !ignored[p] {
			t.Errorf(".dockerignore does not exclude %s", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd", "internal", "api", "web", "migrations"} {
		if ignored[p] {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
		if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
