package citest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	goMod    = "module example.com/m\n\ngo 1.26\n"
	cleanSrc = "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n"
)

// TestLint runs .ci/lint.sh on small modules, each with one fault, and
// checks that it fails naming exactly that check, and passes on the clean
// module. Only the staticcheck cases run staticcheck; the others stand in
// /bin/true for it, to stay quick.
func TestLint(t *testing.T) {
	staticcheck := installedStaticcheck(t)
	tests := []struct {
		name        string
		files       map[string]string
		staticcheck bool
		want        string // the failed checks, as lint.sh lists them; "" for a pass
	}{
		{"clean", map[string]string{"go.mod": goMod, "main.go": cleanSrc}, false, ""},
		{"unformatted file", map[string]string{
			"go.mod":  goMod,
			"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() {\nfmt.Println( \"hi\" )\n}\n",
		}, false, "gofmt"},
		{"untidy go.mod", map[string]string{
			// A requirement nothing imports: tidy would drop it. The replace
			// keeps the check offline.
			"go.mod":        goMod + "\nrequire example.com/unused v1.0.0\n\nreplace example.com/unused => ./unused\n",
			"unused/go.mod": "module example.com/unused\n\ngo 1.26\n",
			"unused/lib.go": "package unused\n",
			"main.go":       cleanSrc,
		}, false, "go mod tidy"},
		{"go vet finding", map[string]string{
			"go.mod":  goMod,
			"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Printf(\"%d\\n\", \"hi\") }\n",
		}, false, "go vet"},
		{"staticcheck clean", map[string]string{"go.mod": goMod, "main.go": cleanSrc}, true, ""},
		{"staticcheck finding", map[string]string{
			"go.mod":  goMod,
			"main.go": cleanSrc + "\nfunc unused() {}\n",
		}, true, "staticcheck"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := "/bin/true"
			if tt.staticcheck {
				if staticcheck == "" {
					t.Fatal("staticcheck is not installed; `make tools` installs it (make test does)")
				}
				sc = staticcheck
			}
			out, err := runLint(t, writeModule(t, tt.files), sc)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("lint.sh: got %v, want a pass; output:\n%s", err, out)
			case tt.want != "" && err == nil:
				t.Errorf("lint.sh: got a pass, want it to fail on %s; output:\n%s", tt.want, out)
			case tt.want != "" && !strings.Contains(out, "lint: failed: "+tt.want+"\n"):
				t.Errorf("lint.sh: got output\n%s\nwant it to end with lint: failed: %s", out, tt.want)
			}
		})
	}
}

func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runLint(t *testing.T, dir, staticcheck string) (string, error) {
	t.Helper()
	script, err := filepath.Abs("../../../.ci/lint.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script)
	cmd.Dir = dir
	// Offline and on this toolchain: the modules need nothing fetched.
	cmd.Env = append(os.Environ(), "STATICCHECK="+staticcheck, "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// installedStaticcheck returns the staticcheck that `make tools` installs,
// or "" when there is none.
func installedStaticcheck(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	lines := strings.Split(string(out), "\n")
	bin := lines[0]
	if bin == "" {
		bin = filepath.Join(filepath.SplitList(lines[1])[0], "bin")
	}
	p := filepath.Join(bin, "staticcheck")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
