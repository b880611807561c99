package testenv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// templatePrefix names the cached result of mariadb-install-db. It is
// shared by every test binary on the machine and kept between runs:
// install-db takes most of a second while copying its 65 MB (mostly an
// empty redo log) sparsely takes a tenth of that, and `go test ./...`
// starts MariaDB once per package. It has no owner file, so
// removeStaleDirs leaves it alone.
const templatePrefix = dirPrefix + "template-"

// templateDataDir returns a pristine datadir made by install with args,
// building and publishing it if no test binary has done so yet. The key
// covers the server binary's identity, so an upgraded MariaDB gets a new
// template instead of an incompatible one.
func templateDataDir(install, server string, args []string) (string, error) {
	key, err := templateKey(install, server, args)
	if err != nil {
		return "", err
	}
	final := filepath.Join(os.TempDir(), templatePrefix+key)
	data := filepath.Join(final, "data")
	if _, err := os.Stat(filepath.Join(data, "mysql")); err == nil {
		return data, nil
	}

	// Build beside it and rename into place: the rename is atomic, so a
	// concurrent binary sees either no template or a complete one. The
	// build dir has an owner file until then, so a crash mid-build leaves
	// only litter that removeStaleDirs collects.
	build, err := makeDir("build")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(build) // no-op after a successful rename
	args = append(args, "--datadir="+filepath.Join(build, "data"))
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("testenv: mariadb-install-db: %w\n%s", err, lastLines(string(out), 30))
	}
	if err := os.Remove(filepath.Join(build, ownerFile)); err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	if err := os.Rename(build, final); err != nil {
		// Another binary published first; its template is as good.
		if _, statErr := os.Stat(filepath.Join(data, "mysql")); statErr == nil {
			return data, nil
		}
		return "", fmt.Errorf("testenv: publish datadir template: %w", err)
	}
	return data, nil
}

func templateKey(install, server string, args []string) (string, error) {
	h := sha256.New()
	for _, p := range []string{install, server} {
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
		fmt.Fprintf(h, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	for _, a := range args {
		fmt.Fprintf(h, "%s\n", a)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// copyTree copies the regular files and dirs under src to dst, keeping
// permission bits.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm())
		case info.Mode().IsRegular():
			return copySparse(path, target, info.Mode().Perm())
		default:
			return fmt.Errorf("testenv: unexpected file %s in datadir template", path)
		}
	})
}

// copySparse copies a file, leaving holes where src has all-zero blocks:
// InnoDB's fresh redo log and system tablespace are mostly zeros.
func copySparse(src, dst string, perm fs.FileMode) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	const block = 64 << 10
	buf := make([]byte, block)
	zero := make([]byte, block)
	var size int64
	for {
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			if bytes.Equal(buf[:n], zero[:n]) {
				_, err = out.Seek(int64(n), io.SeekCurrent)
			} else {
				_, err = out.Write(buf[:n])
			}
			if err != nil {
				return err
			}
			size += int64(n)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	// A trailing hole is only a seek; Truncate gives the file its length.
	return out.Truncate(size)
}
