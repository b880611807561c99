package clientmatrix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// client is one real client library and the driver that runs the cases
// with it.
type client struct {
	name string
	// command returns the command that runs the driver on a run's config
	// file.
	command func(ctx context.Context, config string) *exec.Cmd
}

// connectorJar is Connector/J as Debian's libmariadb-java installs it.
const connectorJar = "/usr/share/java/mariadb-java-client.jar"

// debianPython is the interpreter Debian's python3-* packages install
// into; a python3 earlier on PATH (a virtualenv, pyenv) would not see them.
const debianPython = "/usr/bin/python3"

// clients returns every client of the matrix. It compiles the
// Connector/J driver into a temporary directory first, which fails the
// test when javac or the jar is missing.
func clients(t *testing.T) []client {
	t.Helper()
	td, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	classes := t.TempDir()
	javac := exec.Command("javac", "-d", classes, "-cp", connectorJar, filepath.Join(td, "Driver.java"))
	if out, err := javac.CombinedOutput(); err != nil {
		t.Fatalf("javac Driver.java (packages default-jdk-headless, libmariadb-java): %v\n%s", err, out)
	}
	script := func(name string, args ...string) func(context.Context, string) *exec.Cmd {
		return func(ctx context.Context, config string) *exec.Cmd {
			argv := append(append([]string(nil), args...), config)
			return exec.CommandContext(ctx, name, argv...)
		}
	}
	return []client{
		{"mariadb-cli", script(debianPython, filepath.Join(td, "driver_mariadb_cli.py"))},
		{"pymysql", script(debianPython, filepath.Join(td, "driver_pymysql.py"))},
		{"mysqlclient", script(debianPython, filepath.Join(td, "driver_mysqldb.py"))},
		// mysqli reads LOAD DATA LOCAL files only when php.ini allows it.
		{"php-mysqli", script("php", "-d", "mysqli.allow_local_infile=1", filepath.Join(td, "driver_mysqli.php"))},
		{"php-pdo", script("php", filepath.Join(td, "driver_pdo.php"))},
		{"ruby-mysql2", script("ruby", filepath.Join(td, "driver_mysql2.rb"))},
		{"perl-dbd-mariadb", script("perl", filepath.Join(td, "driver_dbd_mariadb.pl"))},
		{"node-mysql", func(ctx context.Context, config string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, "node", filepath.Join(td, "driver_node_mysql.js"), config)
			// Debian installs node modules in /usr/share/nodejs, which a
			// node from elsewhere does not search by itself.
			cmd.Env = append(os.Environ(), "NODE_PATH=/usr/share/nodejs")
			return cmd
		}},
		{"connector-j", script("java", "-cp", classes+string(filepath.ListSeparator)+connectorJar, "Driver")},
	}
}
