package cachepolicy

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// SampleQueries returns the statements Check runs when given none: point
// and range reads, a join, a read in a transaction, a prepared read, a
// non-cacheable read, writes, and the custom SHOW APP VERSION.
func SampleQueries() []*Query {
	return []*Query{
		{SQL: "SELECT * FROM products WHERE id = 42", Digest: "select * from products where id = ?", Kind: "select",
			Tables: []string{"shop.products"}, DB: "shop", User: "app", ClientAddr: "127.0.0.1:50000", Cacheable: true},
		{SQL: "SELECT name FROM categories ORDER BY name", Digest: "select name from categories order by name", Kind: "select",
			Tables: []string{"shop.categories"}, DB: "shop", User: "app", ClientAddr: "127.0.0.1:50000", Cacheable: true},
		{SQL: "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id = 7",
			Digest: "select o.id, c.name from orders o join customers c on c.id = o.customer_id where o.id = ?", Kind: "select",
			Tables: []string{"shop.orders", "shop.customers"}, DB: "shop", User: "app", ClientAddr: "127.0.0.1:50000", Cacheable: true},
		{SQL: "SELECT balance FROM accounts WHERE id = 3", Digest: "select balance from accounts where id = ?", Kind: "select",
			Tables: []string{"shop.accounts"}, DB: "shop", User: "app", ClientAddr: "127.0.0.1:50000", Cacheable: true, InTransaction: true},
		{SQL: "SELECT * FROM prices WHERE sku = ?", Digest: "select * from prices where sku = ?", Kind: "select",
			Tables: []string{"shop.prices"}, DB: "shop", User: "report", ClientAddr: "127.0.0.1:50001", Cacheable: true,
			Prepared: true, Params: []any{"A-100"}},
		{SQL: "SELECT NOW()", Digest: "select now ( )", Kind: "select", DB: "shop", User: "app",
			ClientAddr: "127.0.0.1:50000", WhyNot: "non-deterministic function NOW"},
		{SQL: "UPDATE customers SET name = 'x' WHERE id = 1", Digest: "update customers set name = ? where id = ?", Kind: "update",
			Tables: []string{"shop.customers"}, DB: "shop", User: "app", ClientAddr: "127.0.0.1:50000", WhyNot: "write"},
		{SQL: "DELETE FROM orders WHERE id = 7", Digest: "delete from orders where id = ?", Kind: "delete",
			Tables: []string{"shop.orders"}, DB: "shop", User: "app", ClientAddr: "127.0.0.1:50000", WhyNot: "write"},
		{SQL: "SHOW APP VERSION", Digest: "show app version", Kind: "show", DB: "shop", User: "app",
			ClientAddr: "127.0.0.1:50000", WhyNot: "unknown statement"},
	}
}

// Check compiles file, runs its hooks against samples (SampleQueries when
// nil) and returns one line per hook call, followed by anything the script
// logged. It is what `mycached check-policy FILE` prints. The error is a
// compile or top-level failure, naming file:line.
func Check(file string, samples []*Query) (string, error) {
	if samples == nil {
		samples = SampleQueries()
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	// A hook is stopped past checkTimeout, not a sidecar's deadline: how
	// long a call takes depends on the machine it runs on, and a call
	// slower than a sidecar's default deadline is noted with its time.
	e, err := Load([]string{file}, Options{Logger: logger, MaxPool: 1, Timeout: checkTimeout})
	if err != nil {
		return "", err
	}
	defer e.Close()
	var out strings.Builder
	for _, q := range samples {
		fmt.Fprintf(&out, "%s\n", q.SQL)
		fmt.Fprintf(&out, "  [kind=%s db=%s user=%s tables=%v cacheable=%t in_transaction=%t prepared=%t]\n",
			q.Kind, q.DB, q.User, q.Tables, q.Cacheable, q.InTransaction, q.Prepared)
		if e.HasQueryHook() {
			start := time.Now()
			r := e.Query(q)
			note := slowNote(start)
			if q.Prepared && (r.Kind == QueryResultSet || r.Kind == QueryAffected) {
				// What a sidecar does with it (README, query()).
				note += " (ignored: rows or an OK cannot answer a prepare, which goes to the server as sent)"
			}
			fmt.Fprintf(&out, "  query:      %s%s\n", formatQueryResult(r), note)
		}
		if q.Cacheable {
			start := time.Now()
			d, ok := e.Cache(q)
			fmt.Fprintf(&out, "  cache:      %s%s\n", FormatDecision(d, ok), slowNote(start))
		} else {
			fmt.Fprintf(&out, "  cache:      not asked (%s)\n", q.WhyNot)
		}
		if isWrite(q.Kind) {
			w := &Write{Tables: q.Tables, Kind: q.Kind, SQL: q.SQL, DB: q.DB, User: q.User}
			start := time.Now()
			ds := e.Invalidate(w)
			fmt.Fprintf(&out, "  invalidate: %v%s\n", ds, slowNote(start))
		}
	}
	if logs.Len() > 0 {
		out.WriteString("\nlog:\n")
		out.Write(logs.Bytes())
	}
	s := e.Stats()
	fmt.Fprintf(&out, "\nstats: calls=%d errors=%d kills=%d bad_results=%d\n", s.Calls, s.Errors, s.Kills, s.BadResults)
	if s.Errors+s.Kills+s.BadResults > 0 {
		return out.String(), &HookFailures{Errors: s.Errors, Kills: s.Kills, BadResults: s.BadResults}
	}
	return out.String(), nil
}

// checkTimeout is a hook call's deadline in Check: long enough that only
// a script that loops, or all but, reaches it on a busy machine.
const checkTimeout = time.Second

// slowNote notes a hook call begun at start that took longer than a
// sidecar's default deadline, which would have stopped it there.
func slowNote(start time.Time) string {
	if d := time.Since(start); d > DefaultTimeout {
		return fmt.Sprintf(" (took %v: a sidecar stops a call at --policy-timeout, %v by default)", d.Round(time.Microsecond), DefaultTimeout)
	}
	return ""
}

// HookFailures is Check's error for a script that loads but whose hooks
// failed on the sample statements; the output is complete, its log says
// where each failed.
type HookFailures struct{ Errors, Kills, BadResults uint64 }

func (h *HookFailures) Error() string {
	return fmt.Sprintf("hooks failed on the sample statements: %d errors, %d killed, %d malformed results (the log above says where)",
		h.Errors, h.Kills, h.BadResults)
}

func isWrite(kind string) bool {
	switch kind {
	case "insert", "update", "delete", "replace", "truncate":
		return true
	}
	return false
}

// FormatDecision renders a decision for humans, "no cache" for none.
func FormatDecision(d Decision, ok bool) string {
	if !ok {
		return "no cache"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ttl=%v scope=%s cache_empty=%t", d.TTL, d.Scope, d.CacheEmpty)
	if d.SoftTTL > 0 {
		fmt.Fprintf(&b, " soft_ttl=%v", d.SoftTTL)
	}
	if d.MaxBytes > 0 {
		fmt.Fprintf(&b, " max_bytes=%d", d.MaxBytes)
	}
	if len(d.Depends) > 0 {
		fmt.Fprintf(&b, " depends=%v", d.Depends)
	}
	if d.Consistency != "" {
		fmt.Fprintf(&b, " consistency=%s", d.Consistency)
	}
	if d.Admit != "" {
		fmt.Fprintf(&b, " admit=%s", d.Admit)
	}
	return b.String()
}

func formatQueryResult(r QueryResult) string {
	switch r.Kind {
	case QueryRewrite:
		return fmt.Sprintf("rewrite %q", r.SQL)
	case QueryAffected:
		return fmt.Sprintf("ok, %d rows affected", r.Affected)
	case QueryError:
		return fmt.Sprintf("error %d: %s", r.ErrCode, r.ErrMsg)
	case QueryResultSet:
		var b strings.Builder
		fmt.Fprintf(&b, "result %v", r.Columns)
		for _, row := range r.Rows {
			b.WriteString(" (")
			for i, c := range row {
				if i > 0 {
					b.WriteString(", ")
				}
				if c == nil {
					b.WriteString("NULL")
				} else {
					fmt.Fprintf(&b, "%q", *c)
				}
			}
			b.WriteString(")")
		}
		return b.String()
	}
	return "go on"
}
