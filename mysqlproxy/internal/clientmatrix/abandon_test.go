package clientmatrix

import (
	"context"
	"fmt"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// abortBound is how soon the server must end a statement whose client
// went away. MariaDB checks a connection waiting for a lock once a second,
// so directly it ends within about a second; the bound allows for a busy
// machine, on which the relay's goroutines that pass the client's close
// on may wait their turn (a statement left running waits for good).
const abortBound = 3 * time.Second

// abandon runs an Abandon case: while the test holds the lock named by
// the run's tag, the driver runs the case, whose last statement waits for
// that lock. Once the statement shows in the server's process list, the
// test kills the driver, so that its connection closes mid-statement, and
// watches whether the server ends the statement within abortBound.
func (r *run) abandon(ctx context.Context, m *testenv.MariaDB, c testCase) ([]any, error) {
	holder, err := m.AdminDB().Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer holder.Close()
	var got int
	if err := holder.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", r.tag).Scan(&got); err != nil || got != 1 {
		return nil, fmt.Errorf("take lock %s: got %d, %v", r.tag, got, err)
	}
	defer holder.ExecContext(context.Background(), "DO RELEASE_LOCK(?)", r.tag)

	waiting := func() (bool, error) {
		var n int
		err := m.AdminDB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE ?",
			"%GET_LOCK(%"+r.tag+"%").Scan(&n)
		return n > 0, err
	}

	p, err := r.start(ctx, c.ID, []testCase{c})
	if err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		for range p.lines {
		}
		close(exited)
	}()
	// Wait until the statement waits for the lock on the server.
	for deadline := time.Now().Add(startTimeout); ; {
		ok, err := waiting()
		if err != nil {
			p.kill()
			return nil, err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			p.kill()
			return []any{map[string]any{"hang": "the statement never reached the server"}}, nil
		}
		select {
		case <-exited:
			werr := p.cmd.Wait()
			return []any{map[string]any{"driver_exited": fmt.Sprint(werr), "stderr": p.stderr.String()}}, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.kill()

	for deadline := time.Now().Add(abortBound); ; {
		ok, err := waiting()
		if err != nil {
			return nil, err
		}
		if !ok {
			return []any{map[string]any{"statement_aborted_within": abortBound.String()}}, nil
		}
		if time.Now().After(deadline) {
			return []any{map[string]any{"statement_still_running_after": abortBound.String()}}, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}
