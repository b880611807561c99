package mysqlproxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// These tests are about the kv-only listener under many clients: the
// order of answers, whose answer is whose, and that one client cannot
// hold up another.

// kvScript is commands of every kind.
var kvScript = []string{
	`SELECT "p1"`,
	`INSERT "p1" = 'one'`,
	`SELECT "p1"`,
	`SELECT "p1", "nope", "p1"`,
	`SELECT "bad key"`,
	`SELECT 'sql'`,
	`INSERT "p2" = x'00ff'`,
	`SELECT "p2", "p1"`,
	`DELETE "p1"`,
	`SELECT *`,
	`SELECT "p1"`,
	`DROP`,
}

// TestKVListenPipelinedAnswersInOrder: a client that sends many commands
// before reading gets the bytes it gets when it sends them one at a time,
// on L1 and on memcached.
func TestKVListenPipelinedAnswersInOrder(t *testing.T) {
	for name, cfg := range kvTiers(t) {
		t.Run(name, func(t *testing.T) {
			addr := startKVListener(t, cfg())
			one := dialRaw(t, addr, "app", kvPass, "", false)
			var want [][]string
			for _, q := range kvScript {
				if err := one.command(append([]byte{0x03}, q...)...); err != nil {
					t.Fatal(err)
				}
				out, err := one.readResponse(false)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				want = append(want, out)
			}
			for round := range 3 {
				all := dialRaw(t, addr, "app", kvPass, "", false)
				for _, q := range kvScript {
					if err := all.command(append([]byte{0x03}, q...)...); err != nil {
						t.Fatal(err)
					}
				}
				for i, q := range kvScript {
					all.Sequence = 1 // each answer starts at 1, which go-mysql expects only after a command
					got, err := all.readResponse(false)
					if err != nil {
						t.Fatalf("round %d, %s: %v", round, q, err)
					}
					if !slices.Equal(got, want[i]) {
						t.Errorf("round %d, %s sent behind others: got %v, want %v", round, q, got, want[i])
					}
				}
			}
		})
	}
}

// TestKVListenSlowReaderHoldsUpOnlyItself: a client that asks for a value
// larger than the socket buffers hold and does not read the answer
// leaves every other client answered; the answer is whole when it reads.
func TestKVListenSlowReaderHoldsUpOnlyItself(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{KVMaxBytes: 64 << 20})
	db := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", ""))
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	if _, err := db.Exec("INSERT ? = ?", "big", big); err != nil {
		t.Fatalf("INSERT big: %v", err)
	}
	mustExec(t, db, `INSERT "small" = "s"`)

	slow := dialRaw(t, addr, "app", kvPass, "", false)
	if err := slow.command(append([]byte{0x03}, `SELECT "big"`...)...); err != nil {
		t.Fatal(err)
	}
	// Enough connections that a slow one could hold up others.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db.SetMaxOpenConns(8)
	var conns []*sql.Conn
	for range 8 {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for round := range 20 {
		for i, c := range conns {
			var k, v string
			if err := c.QueryRowContext(ctx, `SELECT "small"`).Scan(&k, &v); err != nil || v != "s" {
				t.Fatalf("round %d, connection %d, while another client does not read: got %q, %v", round, i, v, err)
			}
		}
	}

	// Column count, two column definitions, EOF, the row, EOF.
	var row []byte
	for i := range 6 {
		p, err := slow.ReadPacket()
		if err != nil {
			t.Fatalf("slow reader, packet %d: %v", i, err)
		}
		if i == 4 {
			row = p
		}
	}
	// The row: "big" and the value, each length-encoded (16 MiB takes
	// the 8-byte form).
	want := append([]byte{3}, "big"...)
	want = binary.LittleEndian.AppendUint64(append(want, 0xfe), uint64(len(big)))
	if want = append(want, big...); !bytes.Equal(row, want) {
		t.Errorf("slow reader's row: got %d bytes, want %d", len(row), len(want))
	}
}

// TestKVListenEachClientGetsItsOwnAnswers: concurrent clients reading and
// writing their own keys, as text and prepared (SELECT ?), each
// see only their own values.
func TestKVListenEachClientGetsItsOwnAnswers(t *testing.T) {
	for name, cfg := range kvTiers(t) {
		t.Run(name, func(t *testing.T) {
			addr := startKVListener(t, cfg())
			db := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", ""))
			const clients = 16
			db.SetMaxOpenConns(clients)
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for c := range clients {
				wg.Go(func() {
					conn, err := db.Conn(context.Background())
					if err != nil {
						errs <- err
						return
					}
					defer conn.Close()
					key := fmt.Sprintf("own%d", c)
					for i := range 150 {
						val := fmt.Sprintf("%d:%d", c, i)
						if i%10 == 0 {
							if _, err := conn.ExecContext(context.Background(), "INSERT ? = ?", key, val); err != nil {
								errs <- err
								return
							}
						} else {
							val = fmt.Sprintf("%d:%d", c, i-i%10)
						}
						q, args := `SELECT "`+key+`"`, []any(nil)
						if i%7 == 3 {
							q, args = "SELECT ?", []any{key}
						}
						var k, v string
						if err := conn.QueryRowContext(context.Background(), q, args...).Scan(&k, &v); err != nil {
							errs <- fmt.Errorf("client %d, read %d: %w", c, i, err)
							return
						}
						if k != key || v != val {
							errs <- fmt.Errorf("client %d, read %d: got %s=%s, want %s=%s", c, i, k, v, key, val)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestKVListenShutdown: Shutdown closes the idle connections and
// returns; their clients see the connection end.
func TestKVListenShutdown(t *testing.T) {
	srv, err := mysqlproxy.NewServer(mysqlproxy.Config{
		KVPasswords: map[string]string{"app": kvPass},
		Logger:      slog.New(slog.NewTextHandler(&testenv.LogBuffer{}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeKV(ln) }()
	db := openDB(t, testenv.DSNFor(ln.Addr().String(), "app", kvPass, "", ""))
	db.SetMaxOpenConns(4)
	var conns []*sql.Conn
	for range 4 {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, mysqlproxy.ErrServerClosed) {
		t.Errorf("ServeKV: got %v, want ErrServerClosed", err)
	}
	for i, c := range conns {
		var k, v string
		err := c.QueryRowContext(context.Background(), `SELECT "x"`).Scan(&k, &v)
		if err == nil || errors.Is(err, sql.ErrNoRows) {
			t.Errorf("connection %d after Shutdown: got %v, want the connection gone", i, err)
		}
	}
}
