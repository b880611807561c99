// Package statedir keeps what a sidecar must not forget across restarts
// in a directory of its own: the binlog follower's position, what the
// binlog showed writes to each table write too, and the invalidations
// still owed to memcached. Each file is replaced whole
// (written aside, synced, renamed), so a crash leaves the old one or the
// new one, never half of either.
package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Dir is an open state directory, locked against other processes. Its
// methods are safe for concurrent use on different files.
type Dir struct {
	path string
	lock *os.File
}

// ErrLocked means another process holds the directory.
var ErrLocked = errors.New("statedir: the directory is in use by another process")

// Open creates the directory if needed and locks it: two sidecars sharing
// one would overwrite each other's position.
func Open(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("statedir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(path, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("statedir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("statedir: lock %s: %w", path, err)
	}
	return &Dir{path: path, lock: f}, nil
}

// Close releases the lock.
func (d *Dir) Close() error { return d.lock.Close() }

// Path returns the directory's path.
func (d *Dir) Path() string { return d.path }

// Read returns the content of a file of the directory, or nil when there
// is none.
func (d *Dir) Read(name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(d.path, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Write replaces a file of the directory with b, durably.
func (d *Dir) Write(name string, b []byte) error {
	tmp, err := os.CreateTemp(d.path, name+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(d.path, name)); err != nil {
		return err
	}
	if dir, err := os.Open(d.path); err == nil {
		_ = dir.Sync()
		dir.Close()
	}
	return nil
}

// Remove deletes a file of the directory; a missing one is no error.
func (d *Dir) Remove(name string) error {
	err := os.Remove(filepath.Join(d.path, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Position is the binlog follower's position, kept in the file
// "binlog-position": the position on its first line (a GTID position and,
// when the follower knows it, " at " and where it lies in the binlog)
// and, on a second
// line when there is one, "co-writes N": the tag of the content of the
// file "co-writes" (CoWrites) that held, unchanged, at that position.
type Position struct{ d *Dir }

// Position returns the follower's position store.
func (d *Dir) Position() Position { return Position{d} }

// Load implements binlog.PositionStore.
func (p Position) Load() (string, error) {
	pos, _, err := p.LoadTagged()
	return pos, err
}

// Save implements binlog.PositionStore.
func (p Position) Save(pos string) error { return p.SaveTagged(pos, 0) }

// LoadTagged returns the position and the co-writes tag saved with it,
// 0 for none.
func (p Position) LoadTagged() (pos string, coWrites uint64, err error) {
	b, err := p.d.Read("binlog-position")
	if err != nil {
		return "", 0, err
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	if v, ok := strings.CutPrefix(strings.TrimSpace(rest), "co-writes "); ok {
		coWrites, _ = strconv.ParseUint(v, 10, 64)
	}
	return strings.TrimSpace(first), coWrites, nil
}

// SaveTagged saves the position with the tag of the co-writes file's
// content that holds at it (0: none does).
func (p Position) SaveTagged(pos string, coWrites uint64) error {
	b := pos + "\n"
	if coWrites != 0 {
		b += "co-writes " + strconv.FormatUint(coWrites, 10) + "\n"
	}
	return p.d.Write("binlog-position", []byte(b))
}

// CoWrites returns the content of the file "co-writes": what the binlog
// showed the writes to each table write too (meta.CoWrites, as JSON), or
// nil when there is none.
func (d *Dir) CoWrites() ([]byte, error) { return d.Read("co-writes") }

// SaveCoWrites replaces the file "co-writes".
func (d *Dir) SaveCoWrites(b []byte) error { return d.Write("co-writes", b) }

// Journal is the store's journal of pending bumps, kept in the file
// "pending-bumps", one quoted dependency a line.
type Journal struct{ d *Dir }

// Journal returns the pending bumps journal.
func (d *Dir) Journal() Journal { return Journal{d} }

// Load implements store.Journal.
func (j Journal) Load() ([]string, error) {
	b, err := j.d.Read("pending-bumps")
	if err != nil {
		return nil, err
	}
	var deps []string
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		d, err := strconv.Unquote(line)
		if err != nil {
			return nil, fmt.Errorf("statedir: pending-bumps: %q: %w", line, err)
		}
		deps = append(deps, d)
	}
	return deps, nil
}

// Save implements store.Journal.
func (j Journal) Save(deps []string) error {
	if len(deps) == 0 {
		return j.d.Remove("pending-bumps")
	}
	var b strings.Builder
	for _, d := range deps {
		b.WriteString(strconv.Quote(d))
		b.WriteByte('\n')
	}
	return j.d.Write("pending-bumps", []byte(b.String()))
}
