package check

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// Image facts the Dockerfile must keep.
const (
	BuildImage   = "golang:1.26-bookworm"
	RuntimeImage = "debian:bookworm-slim"
	// VersionPkg holds the variables the build sets with -ldflags -X.
	VersionPkg = "github.com/wayfinder/wayfinder/internal/version"
)

// RuntimePackages must be installed in the runtime stage.
var RuntimePackages = []string{"chromium", "fonts-liberation", "ca-certificates", "tini"}

// Dockerfile is a parsed Dockerfile.
type Dockerfile struct {
	Stages   []instructions.Stage
	MetaArgs []instructions.ArgCommand
	// Lint are BuildKit's lint warnings (docker build --check).
	Lint []string
}

// ParseDockerfile parses and lints a Dockerfile with BuildKit's own
// parser, the one `docker build` uses.
func ParseDockerfile(src []byte) (*Dockerfile, error) {
	res, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	df := &Dockerfile{}
	for _, w := range res.Warnings {
		df.Lint = append(df.Lint, w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, desc, url, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		df.Lint = append(df.Lint, fmt.Sprintf("line %d: %s: %s", line, rule, msg))
	}})
	df.Stages, df.MetaArgs, err = instructions.Parse(res.AST, lint)
	if err != nil {
		return nil, err
	}
	return df, nil
}

// GoBuild is the `go build` of the build stage: its environment
// assignments and its arguments, ARGs expanded with args.
type GoBuild struct {
	Env  []string
	Args []string
}

// FindGoBuild returns the build stage's `go build` command with its ARGs
// set to args (missing ones take their defaults).
func (df *Dockerfile) FindGoBuild(args map[string]string) (*GoBuild, error) {
	if len(df.Stages) == 0 {
		return nil, errors.New("no stage")
	}
	env := map[string]string{}
	for _, c := range df.Stages[0].Commands {
		switch c := c.(type) {
		case *instructions.ArgCommand:
			for _, a := range c.Args {
				if v, ok := args[a.Key]; ok {
					env[a.Key] = v
				} else if a.Value != nil {
					env[a.Key] = *a.Value
				}
			}
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				env[kv.Key] = kv.Value
			}
		case *instructions.RunCommand:
			line := strings.Join(c.CmdLine, " ")
			if !strings.Contains(line, "go build") {
				continue
			}
			var kv []string
			for k, v := range env {
				kv = append(kv, k+"="+v)
			}
			words, err := shell.NewLex('\\').ProcessWords(line, shell.EnvsFromSlice(kv))
			if err != nil {
				return nil, fmt.Errorf("RUN %s: %w", line, err)
			}
			return splitGoBuild(words)
		}
	}
	return nil, errors.New("the first stage runs no go build")
}

// splitGoBuild splits "[VAR=value…] go build args…".
func splitGoBuild(words []string) (*GoBuild, error) {
	b := &GoBuild{}
	for i, w := range words {
		if w == "go" && i+1 < len(words) && words[i+1] == "build" {
			b.Args = words[i+2:]
			return b, nil
		}
		if !strings.Contains(w, "=") {
			return nil, fmt.Errorf("%q before go build is not an assignment", w)
		}
		b.Env = append(b.Env, w)
	}
	return nil, fmt.Errorf("no go build in %q", words)
}

// Flags returns the build's flags other than -o and -ldflags, and the
// packages built.
func (b *GoBuild) Flags() (flags, pkgs []string) {
	for i := 0; i < len(b.Args); i++ {
		a := b.Args[i]
		switch {
		case a == "-o" || a == "-ldflags":
			i++
		case strings.HasPrefix(a, "-o=") || strings.HasPrefix(a, "-ldflags="):
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
		default:
			pkgs = append(pkgs, a)
		}
	}
	return flags, pkgs
}

// XVars returns the variables the build's -ldflags set with -X, by name.
func (b *GoBuild) XVars() map[string]string {
	out := map[string]string{}
	for i, a := range b.Args {
		var ld string
		switch {
		case a == "-ldflags" && i+1 < len(b.Args):
			ld = b.Args[i+1]
		case strings.HasPrefix(a, "-ldflags="):
			ld = strings.TrimPrefix(a, "-ldflags=")
		default:
			continue
		}
		f := strings.Fields(ld)
		for j := 0; j < len(f); j++ {
			x := f[j]
			if x == "-X" && j+1 < len(f) {
				j++
				x = f[j]
			} else if !strings.HasPrefix(x, "-X=") {
				continue
			}
			x = strings.TrimPrefix(x, "-X=")
			if name, v, ok := strings.Cut(x, "="); ok {
				out[name] = v
			}
		}
	}
	return out
}

// MakeBuild returns the `go build` that `make build` runs in dir (make -n
// prints it without running it).
func MakeBuild(dir string) (*GoBuild, error) {
	cmd := exec.Command("make", "-n", "--no-print-directory", "build")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("make -n build: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, " build ") {
			continue
		}
		words, err := shell.NewLex('\\').ProcessWords(line, shell.EnvsFromSlice(nil))
		if err != nil {
			return nil, err
		}
		// make prints $(GO) expanded: the first word is the go command.
		if len(words) > 1 && strings.HasSuffix(words[0], "go") && words[1] == "build" {
			words[0] = "go"
		}
		return splitGoBuild(words)
	}
	return nil, fmt.Errorf("make -n build runs no go build:\n%s", out)
}

// CheckDockerfile checks the image the Dockerfile describes; mk is the
// Makefile's build, which the image's must match.
func CheckDockerfile(df *Dockerfile, mk *GoBuild) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, l := range df.Lint {
		fail("lint: %s", l)
	}
	if len(df.Stages) < 2 {
		fail("want a build stage and a runtime stage, have %d stage(s)", len(df.Stages))
		return errs
	}
	if df.Stages[0].BaseName != BuildImage {
		fail("build stage FROM %s, want %s", df.Stages[0].BaseName, BuildImage)
	}
	final := df.Stages[len(df.Stages)-1]
	if final.BaseName != RuntimeImage {
		fail("runtime stage FROM %s, want %s", final.BaseName, RuntimeImage)
	}

	b, err := df.FindGoBuild(nil)
	if err != nil {
		fail("build stage: %v", err)
	} else {
		flags, pkgs := b.Flags()
		mflags, mpkgs := mk.Flags()
		if !slices.Equal(flags, mflags) || !slices.Equal(pkgs, mpkgs) {
			fail("go build %v %v differs from make build's %v %v", flags, pkgs, mflags, mpkgs)
		}
		if !slices.Contains(flags, "-trimpath") {
			fail("go build without -trimpath")
		}
		x, mx := b.XVars(), mk.XVars()
		for _, v := range []string{"Version", "Commit", "Date"} {
			name := VersionPkg + "." + v
			if _, ok := x[name]; !ok {
				fail("go build does not set %s with -ldflags -X", name)
			}
			if _, ok := mx[name]; !ok {
				fail("make build does not set %s with -ldflags -X (the image and make build must stamp the same)", name)
			}
		}
		for name, v := range x {
			if _, ok := mx[name]; !ok {
				fail("go build sets %s, make build does not", name)
			}
			if v == "" {
				fail("go build sets %s to nothing (an undefined ARG?)", name)
			}
		}
		for name := range mx {
			if _, ok := x[name]; !ok {
				fail("make build sets %s, the image does not", name)
			}
		}
	}

	var user, health, entry, cmd bool
	installed := map[string]bool{}
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = true
			u, g, _ := strings.Cut(c.User, ":")
			for _, id := range []string{u, g} {
				if id == "" {
					continue
				}
				if n, err := strconv.Atoi(id); err != nil || n == 0 {
					fail("USER %s: want a numeric non-root uid[:gid] (Kubernetes' runAsNonRoot can only verify a number)", c.User)
				}
			}
		case *instructions.HealthCheckCommand:
			health = true
			t := c.Health.Test
			if len(t) < 3 || t[0] != "CMD" || t[1] != "wayfinder" || t[2] != "health" {
				fail("HEALTHCHECK %v: want the exec form CMD [\"wayfinder\", \"health\"]", t)
			}
		case *instructions.EntrypointCommand:
			entry = true
			if c.PrependShell || len(c.CmdLine) < 3 || !strings.HasSuffix(c.CmdLine[0], "/tini") || c.CmdLine[1] != "--" || c.CmdLine[2] != "wayfinder" {
				fail("ENTRYPOINT %v: want the exec form [\"/usr/bin/tini\", \"--\", \"wayfinder\"] (tini reaps orphaned Chromium processes)", c.CmdLine)
			}
		case *instructions.CmdCommand:
			cmd = true
		case *instructions.RunCommand:
			for _, p := range AptPackages(strings.Join(c.CmdLine, " ")) {
				installed[p] = true
			}
		}
	}
	if !user {
		fail("the runtime stage has no USER: it would run as root")
	}
	if !health {
		fail("the runtime stage has no HEALTHCHECK")
	}
	if !entry {
		fail("the runtime stage has no ENTRYPOINT")
	}
	if !cmd {
		fail("the runtime stage has no CMD")
	}
	for _, p := range RuntimePackages {
		if !installed[p] {
			fail("the runtime stage does not install %s", p)
		}
	}
	return errs
}

// AptPackages returns the packages a shell line installs with apt-get
// install.
func AptPackages(line string) []string {
	var pkgs []string
	for _, part := range strings.FieldsFunc(line, func(r rune) bool { return r == '&' || r == ';' || r == '|' }) {
		f := strings.Fields(part)
		i := slices.Index(f, "install")
		if i < 1 || !slices.ContainsFunc(f[:i], func(w string) bool { return strings.HasSuffix(w, "apt-get") }) {
			continue
		}
		for _, w := range f[i+1:] {
			if !strings.HasPrefix(w, "-") && w != "\\" {
				pkgs = append(pkgs, w)
			}
		}
	}
	return pkgs
}
