package localpg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// runAs is the unprivileged account initdb and postgres run as when the
// current process is root. A nil *runAs means "run as the current user".
type runAs struct {
	name   string
	uid    uint32
	gid    uint32
	groups []uint32 // supplementary groups, including gid
}

// lookupRunAs resolves the OS account name into ids.
func lookupRunAs(name string) (*runAs, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("localpg: look up user %q to run postgres as (the process is root and postgres refuses to run as root; create the user, e.g. useradd --system %s, or set Options.User): %w", name, name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("localpg: user %q has non-numeric uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("localpg: user %q has non-numeric gid %q: %w", name, u.Gid, err)
	}
	if uid == 0 {
		return nil, fmt.Errorf("localpg: user %q has uid 0, but postgres refuses to run as root; set Options.User to an unprivileged account", name)
	}
	r := &runAs{name: name, uid: uint32(uid), gid: uint32(gid), groups: []uint32{uint32(gid)}}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			n, err := strconv.ParseUint(g, 10, 32)
			if err == nil && !slices.Contains(r.groups, uint32(n)) {
				r.groups = append(r.groups, uint32(n))
			}
		}
	}
	return r, nil
}

// credential returns the credential for exec.Cmd.SysProcAttr; nil when r is
// nil. Setting Groups drops root's supplementary groups in the child.
func (r *runAs) credential() *syscall.Credential {
	if r == nil {
		return nil
	}
	return &syscall.Credential{Uid: r.uid, Gid: r.gid, Groups: slices.Clone(r.groups)}
}

// canSearch reports whether r may traverse the directory described by fi,
// following the POSIX owner/group/other precedence (ACLs are not considered).
func (r *runAs) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // cannot tell; let the server report it
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == r.uid:
		return perm&0o100 != 0
	case slices.Contains(r.groups, st.Gid):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// checkTraversable verifies that r can reach dir, i.e. can search every
// parent directory of dir. dir must be absolute and free of symlinks.
func checkTraversable(dir string, r *runAs) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("localpg: stat %s: %w", d, err)
		}
		if !r.canSearch(fi) {
			return fmt.Errorf("localpg: directory %s (mode %v) is not traversable by user %q, which runs postgres because this process is root; "+
				"choose a data directory that user can reach, such as /var/lib/wayfinder, or grant it search permission (chmod o+x %s)",
				d, fi.Mode().Perm(), r.name, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// chownTree gives root and everything below it to r, like chown -R, without
// following symlinks. A missing root is not an error.
func chownTree(root string, r *runAs) error {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == r.uid && st.Gid == r.gid {
			return nil
		}
		return os.Lchown(path, int(r.uid), int(r.gid))
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("localpg: chown %s to %s: %w", root, r.name, err)
	}
	return nil
}

// mkdirParents creates dir and its missing parents with mode 0755 (not
// subject to the umask), so that an unprivileged run user can traverse them.
func mkdirParents(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("localpg: %s is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("localpg: %w", err)
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirParents(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return fmt.Errorf("localpg: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return nil
}

// mkdirPrivate creates dir with mode 0700 if it does not exist.
func mkdirPrivate(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("localpg: %w", err)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("localpg: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("localpg: %s exists and is not a directory", dir)
	}
	return nil
}
