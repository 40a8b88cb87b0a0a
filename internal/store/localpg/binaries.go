package localpg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoBinaries is returned (wrapped) by FindBinaries and Start when the
// PostgreSQL server binaries initdb and postgres cannot be found.
var ErrNoBinaries = errors.New("localpg: PostgreSQL server binaries (initdb, postgres) not found")

// envBinDir names the environment variable that points FindBinaries at the
// directory holding initdb and postgres.
const envBinDir = "WAYFINDER_PG_BIN"

// installHint tells the user how to get out of an ErrNoBinaries situation.
const installHint = "install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql@16), " +
	"set " + envBinDir + " to the directory holding initdb and postgres, " +
	"or set DATABASE_URL to use an existing database"

// binSearch holds the inputs of the binary search so tests can replace the
// environment and the well-known directories.
type binSearch struct {
	envDir string // value of WAYFINDER_PG_BIN; if set, it is the only place looked at
	path   string // value of PATH

	// versionedGlobs are patterns with exactly one '*' standing for a major
	// version ("/usr/lib/postgresql/*/bin"); the highest version wins.
	versionedGlobs []string
	// fallbackDirs are tried in order after the versioned directories.
	fallbackDirs []string
}

func defaultBinSearch() binSearch {
	return binSearch{
		envDir: os.Getenv(envBinDir),
		path:   os.Getenv("PATH"),
		versionedGlobs: []string{
			"/usr/lib/postgresql/*/bin",          // Debian, Ubuntu
			"/usr/pgsql-*/bin",                   // PGDG RPMs (RHEL, Fedora)
			"/opt/homebrew/opt/postgresql@*/bin", // Homebrew, Apple silicon (keg-only, not on PATH)
			"/usr/local/opt/postgresql@*/bin",    // Homebrew, Intel
		},
		fallbackDirs: []string{"/usr/local/pgsql/bin"}, // source builds
	}
}

// FindBinaries returns the directory that holds the PostgreSQL server
// binaries initdb and postgres. It looks, in order, at:
//
//  1. the directory named by the WAYFINDER_PG_BIN environment variable, if it
//     is set (nothing else is searched then);
//  2. initdb and postgres on PATH, after resolving symlinks; both must resolve
//     into the same directory;
//  3. the highest-numbered /usr/lib/postgresql/*/bin (and the equivalent
//     PGDG /usr/pgsql-*/bin and Homebrew postgresql@* directories);
//  4. /usr/local/pgsql/bin.
//
// If none of them has both binaries, the error wraps ErrNoBinaries and says
// how to install PostgreSQL or configure an existing database instead.
func FindBinaries() (dir string, err error) {
	return defaultBinSearch().find()
}

func (b binSearch) find() (string, error) {
	if b.envDir != "" {
		if err := checkBinDir(b.envDir); err != nil {
			return "", fmt.Errorf("%s=%s: %w", envBinDir, b.envDir, err)
		}
		return b.envDir, nil
	}

	if dir, ok := b.fromPath(); ok {
		return dir, nil
	}

	if dir, ok := b.highestVersioned(); ok {
		return dir, nil
	}

	for _, dir := range b.fallbackDirs {
		if hasBinaries(dir) {
			return dir, nil
		}
	}

	searched := append([]string{"PATH"}, b.versionedGlobs...)
	searched = append(searched, b.fallbackDirs...)
	return "", fmt.Errorf("%w (searched %s); %s", ErrNoBinaries, strings.Join(searched, ", "), installHint)
}

// fromPath looks up initdb and postgres on b.path and reports the directory
// both resolve to.
func (b binSearch) fromPath() (string, bool) {
	initdb, ok := lookPath("initdb", b.path)
	if !ok {
		return "", false
	}
	postgres, ok := lookPath("postgres", b.path)
	if !ok {
		return "", false
	}
	initdb, err := filepath.EvalSymlinks(initdb)
	if err != nil {
		return "", false
	}
	postgres, err = filepath.EvalSymlinks(postgres)
	if err != nil {
		return "", false
	}
	// initdb runs the postgres binary from its own directory, so a postgres
	// elsewhere on PATH would not be the one used to create the cluster.
	if dir := filepath.Dir(initdb); dir == filepath.Dir(postgres) {
		return dir, true
	}
	return "", false
}

// highestVersioned returns the matching directory of b.versionedGlobs with the
// highest version that holds both binaries.
func (b binSearch) highestVersioned() (string, bool) {
	type candidate struct {
		dir     string
		version []int
	}
	var cands []candidate
	for _, pattern := range b.versionedGlobs {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			continue
		}
		for _, m := range matches {
			v, ok := globVersion(pattern, m)
			if !ok || !hasBinaries(m) {
				continue
			}
			cands = append(cands, candidate{dir: m, version: v})
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	best := slices.MaxFunc(cands, func(a, b candidate) int { return slices.Compare(a.version, b.version) })
	return best.dir, true
}

// globVersion extracts the version that the single '*' of pattern matched in
// path, e.g. ("/usr/lib/postgresql/*/bin", "/usr/lib/postgresql/9.6/bin")
// gives [9 6].
func globVersion(pattern, path string) ([]int, bool) {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return nil, false
	}
	prefix, suffix := pattern[:star], pattern[star+1:]
	if len(path) < len(prefix)+len(suffix) || !strings.HasPrefix(path, prefix) || !strings.HasSuffix(path, suffix) {
		return nil, false
	}
	var version []int
	for part := range strings.SplitSeq(path[len(prefix):len(path)-len(suffix)], ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, false
		}
		version = append(version, n)
	}
	return version, true
}

// lookPath is exec.LookPath with an explicit PATH value. Empty PATH entries
// (meaning the current directory) are ignored.
func lookPath(name, path string) (string, bool) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, true
		}
	}
	return "", false
}

// checkBinDir reports whether dir holds both initdb and postgres.
func checkBinDir(dir string) error {
	var missing []string
	for _, name := range []string{"initdb", "postgres"} {
		if !isExecutable(filepath.Join(dir, name)) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s has no executable %s; %s", ErrNoBinaries, dir, strings.Join(missing, " or "), installHint)
	}
	return nil
}

func hasBinaries(dir string) bool { return checkBinDir(dir) == nil }

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
