package clientmatrix

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// testCase is one entry of testdata/cases.json: steps that a driver runs
// in order on fresh connections.
type testCase struct {
	ID    string `json:"id"`
	About string `json:"about"`
	// Reconnect opens the case's connections with the client's reconnect
	// option, where it has one.
	Reconnect bool `json:"reconnect,omitempty"`
	// Compress opens the case's connections (but the admin one) with the
	// compressed protocol, where the client has it (all but PyMySQL and
	// node mysql); the others run the case uncompressed. mysqlclient
	// runs every case compressed.
	Compress bool `json:"compress,omitempty"`
	// Abandon marks a case whose last statement blocks: the test kills
	// the client while it waits and watches the server (see abandon_test.go).
	Abandon bool   `json:"abandon,omitempty"`
	Steps   []step `json:"steps"`
}

// step is one thing a driver does. Exactly one of SQL, Prepare, Sleep and
// Ping is set.
type step struct {
	// Conn names the connection: "main" (the default), "peer" (another
	// connection to the same target as the same user) or "admin" (the
	// superuser, always straight to MariaDB).
	Conn string `json:"conn,omitempty"`
	// SQL is sent as text; it may hold several statements.
	SQL lines `json:"sql,omitempty"`
	// Prepare is run as a prepared statement with Params, where the client
	// can; other clients interpolate the parameters themselves.
	Prepare lines `json:"prepare,omitempty"`
	// Params are strings, null, {"int": n} or {"double": x}.
	Params []json.RawMessage `json:"params,omitempty"`
	// Sleep pauses the driver for this many seconds.
	Sleep float64 `json:"sleep,omitempty"`
	// Ping asks the client to check its connection, reconnecting if the
	// case asks for Reconnect and the client can.
	Ping bool `json:"ping,omitempty"`
}

// lines is SQL text, written in cases.json as a string or, for long
// statements, as an array of lines.
type lines string

func (l *lines) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = lines(s)
		return nil
	}
	var ls []string
	if err := json.Unmarshal(b, &ls); err != nil {
		return fmt.Errorf("clientmatrix: sql must be a string or an array of strings: %w", err)
	}
	*l = lines(strings.Join(ls, "\n"))
	return nil
}

// loadCases reads and checks testdata/cases.json.
func loadCases(t testing.TB) []testCase {
	t.Helper()
	b, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []testCase
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cases); err != nil {
		t.Fatalf("testdata/cases.json: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if c.ID == "" || seen[c.ID] {
			t.Fatalf("testdata/cases.json: case id %q is empty or repeated", c.ID)
		}
		seen[c.ID] = true
		for i, s := range c.Steps {
			set := 0
			for _, ok := range []bool{s.SQL != "", s.Prepare != "", s.Sleep > 0, s.Ping} {
				if ok {
					set++
				}
			}
			if set != 1 {
				t.Fatalf("testdata/cases.json: case %s step %d: want exactly one of sql, prepare, sleep, ping", c.ID, i)
			}
		}
	}
	return cases
}

// sleeps returns the seconds a case spends in sleep steps.
func (c testCase) sleeps() float64 {
	var s float64
	for _, st := range c.Steps {
		s += st.Sleep
	}
	return s
}

// expand returns the case with its placeholders filled in: {db} is the
// run's database, {tag} a name unique to the run, {datafile} the data file
// for LOAD DATA. {main_id} is left for the driver, which alone knows its
// connection's id.
func (c testCase) expand(r *strings.Replacer) testCase {
	out := c
	out.Steps = make([]step, len(c.Steps))
	for i, s := range c.Steps {
		s.SQL = lines(r.Replace(string(s.SQL)))
		s.Prepare = lines(r.Replace(string(s.Prepare)))
		params := make([]json.RawMessage, len(s.Params))
		for j, p := range s.Params {
			params[j] = json.RawMessage(r.Replace(string(p)))
		}
		s.Params = params
		out.Steps[i] = s
	}
	return out
}
