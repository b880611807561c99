package systemd

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const unitFile = "mycached.service"

// unit is a parsed unit file: section -> key -> every value, in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, text string) unit {
	t.Helper()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || l[0] == '#' || l[0] == ';':
		case l[0] == '[' && l[len(l)-1] == ']':
			section = l[1 : len(l)-1]
			u[section] = map[string][]string{}
		case section == "":
			t.Fatalf("%s:%d: %q outside a section", unitFile, n, l)
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || strings.HasSuffix(l, `\`) {
				t.Fatalf("%s:%d: got %q, want one key=value per line", unitFile, n, l)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// last is the value of key in section that systemd uses: the last one.
func (u unit) last(section, key string) (string, bool) {
	vs := u[section][key]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// TestUnitDirectives checks the hardening that README.md promises, with no
// help from systemd, so that it runs everywhere.
func TestUnitDirectives(t *testing.T) {
	text, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	u := parseUnit(t, string(text))
	want := []struct{ key, value string }{
		{"Type", "exec"},
		{"DynamicUser", "yes"},
		{"StateDirectory", "mycached"},
		{"StateDirectoryMode", "0700"},
		{"ProtectSystem", "strict"},
		{"ProtectHome", "yes"},
		{"PrivateTmp", "yes"},
		{"PrivateDevices", "yes"},
		{"NoNewPrivileges", "yes"},
		{"CapabilityBoundingSet", ""},
		{"RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"},
		{"RestrictNamespaces", "yes"},
		{"RestrictSUIDSGID", "yes"},
		{"MemoryDenyWriteExecute", "yes"},
		{"SystemCallArchitectures", "native"},
		{"RestartPreventExitStatus", "2"},
	}
	for _, w := range want {
		if got, ok := u.last("Service", w.key); !ok || got != w.value {
			t.Errorf("[Service] %s: got %q (set: %v), want %q", w.key, got, ok, w.value)
		}
	}
	if got := u["Service"]["SystemCallFilter"]; len(got) == 0 || got[0] != "@system-service" {
		t.Errorf("[Service] SystemCallFilter: got %q, want @system-service first", got)
	}
	if got, _ := u.last("Install", "WantedBy"); got != "multi-user.target" {
		t.Errorf("[Install] WantedBy: got %q, want multi-user.target", got)
	}

	// ProtectSystem=strict leaves only the state directory writable, so
	// --state-dir must name it.
	execStart, _ := u.last("Service", "ExecStart")
	args := strings.Fields(execStart)
	if len(args) == 0 || args[0] != "/usr/local/bin/mycached" {
		t.Fatalf("ExecStart: got %q, want /usr/local/bin/mycached and its flags", execStart)
	}
	if !strings.Contains(execStart, " --state-dir /var/lib/mycached ") {
		t.Errorf("ExecStart: got %q, want --state-dir /var/lib/mycached, the StateDirectory", execStart)
	}
	// Every flag it passes is one mycached has (README.md lists them all).
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "--") && !bytes.Contains(readme, []byte("\n  "+a+" ")) {
			t.Errorf("ExecStart: %s is not among the flags in README.md", a)
		}
	}
}

// TestUnitVerify runs systemd-analyze verify, which knows every directive
// of the systemd installed, and systemd-analyze security, which scores the
// sandbox, on a copy of the unit whose ExecStart names an executable stub
// (verify wants the binary to exist).
func TestUnitVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is not installed: run make deps (Debian package systemd)")
	}
	text, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "mycached")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, unitFile)
	if err := os.WriteFile(copyPath, bytes.ReplaceAll(text, []byte("/usr/local/bin/mycached"), []byte(stub)), 0o644); err != nil {
		t.Fatal(err)
	}

	// verify exits 0 on an unknown key or a bad value and only says so on
	// stderr, so any output is a finding.
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: got %v and\n%s\nwant exit 0 and no output", err, out)
	}
	// An exposure of 2.0 or less is what systemd calls OK (the unit
	// scores 1.4 on systemd 252).
	out, err = exec.Command(analyze, "security", "--offline=yes", "--threshold=20", copyPath).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security --threshold=20: got %v, want an exposure of at most 2.0:\n%s", err, out)
	}
}
