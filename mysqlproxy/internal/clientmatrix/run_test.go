package clientmatrix

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A driver that says nothing for this long is taken to hang: it is killed
// and restarted after the case it was in, which records the hang. These
// are bounds on a stuck client, not measurements; a case's sleeps are
// added to its bound.
const (
	// startTimeout covers an interpreter's or the JVM's start on a busy
	// machine, until the first case starts.
	startTimeout = 60 * time.Second
	// stepTimeout is the silence allowed between two lines of a case. A
	// step of the blobs case has the mariadb CLI lay out 1.4 MB of binary
	// as a table, through a pty, for its driver to normalize: under the
	// whole -race suite on two cores it passed 15 s through mycached (with
	// and without caching) in two runs of about ten, and passed in the
	// others and alone. A client that hangs still ends the case.
	stepTimeout = 60 * time.Second
)

// connConf is how a driver reaches a server.
type connConf struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	User     string `json:"user"`
	Password string `json:"password"`
	Database string `json:"database"`
}

// runConfig is the file a driver reads: where to connect, and the cases.
type runConfig struct {
	Target connConf   `json:"target"`
	Admin  connConf   `json:"admin"`
	Cases  []testCase `json:"cases"`
}

// target is where a run's connections go: MariaDB itself, or a mycached.
type target struct {
	name string // "direct", "cached", "passthrough"
	host string
	port int
}

// run is one client running the case list against one target, in a
// database of its own.
type run struct {
	client client
	target target
	user   connConf // the ordinary user, with Database set to the run's database
	admin  connConf
	tag    string     // unique to the run: lock names
	cases  []testCase // run by execute
	// abandoned are the Abandon cases, run one by one by abandon.
	abandoned []testCase
	dir       string            // where config files go
	norm      *strings.Replacer // run-specific names to their placeholders
}

// transcript is what a client saw in a run: per case id, one normalized
// JSON value per line the driver printed, plus lines of the test's own
// for a case that hung or whose driver died.
type transcript map[string][]any

// driverProc is a running driver, in a process group of its own, and the
// lines it prints.
type driverProc struct {
	cmd    *exec.Cmd
	lines  <-chan []byte // closed when stdout ends
	stderr *tailBuffer
}

// start writes a config file holding cases, named after the run and
// label, and starts the driver on it.
func (r *run) start(ctx context.Context, label string, cases []testCase) (*driverProc, error) {
	conf := runConfig{Target: r.user, Admin: r.admin, Cases: cases}
	conf.Target.Host, conf.Target.Port = r.target.host, r.target.port
	b, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(r.dir, fmt.Sprintf("%s-%s-%s.json", r.client.name, r.target.name, label))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, err
	}
	cmd := r.client.command(ctx, path)
	ownProcessGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &driverProc{cmd: cmd, stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", r.client.name, err)
	}
	lines := make(chan []byte)
	p.lines = lines
	go func() {
		defer close(lines)
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			b, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(b)) > 0 {
				lines <- b
			}
			if err != nil {
				return
			}
		}
	}()
	return p, nil
}

// kill ends the driver and everything it started, and waits for it.
func (p *driverProc) kill() {
	killGroup(p.cmd)
	go func() {
		for range p.lines {
		}
	}()
	_ = p.cmd.Wait()
}

// execute runs the driver over every case, restarting it after a case
// that hangs or kills it.
func (r *run) execute(ctx context.Context) (transcript, error) {
	out := transcript{}
	pending := r.cases
	for attempt := 0; len(pending) > 0; attempt++ {
		var err error
		pending, err = r.runOnce(ctx, attempt, pending, out)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// runOnce runs the driver on cases and records its transcript until it
// exits or stalls. It returns the cases it did not reach. An error means
// the driver could not run at all, or broke the transcript's format.
func (r *run) runOnce(ctx context.Context, attempt int, cases []testCase, out transcript) ([]testCase, error) {
	p, err := r.start(ctx, fmt.Sprint(attempt), cases)
	if err != nil {
		return nil, err
	}
	next := 0 // index in cases of the case running or about to
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	for {
		select {
		case b, ok := <-p.lines:
			if !ok {
				return r.exited(p, attempt, cases, next, out)
			}
			var ev map[string]any
			if err := json.Unmarshal(b, &ev); err != nil {
				p.kill()
				return nil, fmt.Errorf("%s printed a line that is not JSON: %v: %.200q", r.client.name, err, b)
			}
			id, _ := ev["case"].(string)
			if next >= len(cases) || id != cases[next].ID {
				p.kill()
				return nil, fmt.Errorf("%s printed a line of case %q out of order", r.client.name, id)
			}
			delete(ev, "case")
			switch ev["event"] {
			case "start":
				out[id] = []any{}
			case "end":
				next++
			default:
				out[id] = append(out[id], r.normalize(ev))
			}
			timer.Reset(stepTimeout + time.Duration(cases[min(next, len(cases)-1)].sleeps()*float64(time.Second)))
		case <-timer.C:
			p.kill()
			if next >= len(cases) {
				return nil, fmt.Errorf("%s did not exit after its last case", r.client.name)
			}
			id := cases[next].ID
			out[id] = append(out[id], map[string]any{"hang": "no answer; the client was killed"})
			return cases[next+1:], nil
		}
	}
}

// exited handles a driver whose output ended with cases[next] unfinished
// (or none, when next is past the end). A driver that dies before its
// first case cannot run here at all: a missing package, say.
func (r *run) exited(p *driverProc, attempt int, cases []testCase, next int, out transcript) ([]testCase, error) {
	werr := p.cmd.Wait()
	switch {
	case next >= len(cases) && werr == nil:
		return nil, nil
	case next >= len(cases):
		return nil, fmt.Errorf("%s exited with %v after its last case; stderr:\n%s", r.client.name, werr, p.stderr)
	case attempt == 0 && next == 0 && len(out) == 0:
		return nil, fmt.Errorf("%s exited (%v) before its first case; stderr:\n%s", r.client.name, werr, p.stderr)
	}
	id := cases[next].ID
	out[id] = append(out[id], map[string]any{"driver_exited": fmt.Sprint(werr), "stderr": p.stderr.String()})
	return cases[next+1:], nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex // protects b
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
