package kv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
)

// getBatch is how many keys SELECT * reads per GetMulti: large enough to
// amortize round trips, small enough to keep one reply bounded.
const getBatch = 100

// Exec runs st against s and returns what to send to the client. namespace
// is "" for the shared kv namespace or UserNamespace(user) for a per-user
// one; it goes between opts.Prefix and the key. st must have no unbound
// placeholders (see Bind). Exec validates keys and the value before it
// writes anything, so an error result never leaves a partial write.
func Exec(ctx context.Context, s Store, opts Options, namespace string, st *Stmt) Result {
	opts = opts.withDefaults()
	if st.Params > 0 {
		return ErrorResult(ErrUnbound)
	}
	ns := opts.Prefix + namespace
	// One deadline for the statement, however many calls it makes.
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	switch st.Op {
	case OpInsert:
		return execInsert(ctx, s, opts, ns, st)
	case OpSelect:
		return execSelect(ctx, s, opts, ns, st)
	case OpDelete:
		return execDelete(ctx, s, opts, ns, st)
	case OpSelectAll:
		return execSelectAll(ctx, s, opts, ns)
	case OpDrop:
		return execDrop(ctx, s, opts, ns)
	}
	return errorResult(CodeUnknown, StateGeneral, fmt.Sprintf("mycached: unknown kv statement %d", st.Op))
}

func execInsert(ctx context.Context, s Store, opts Options, ns string, st *Stmt) Result {
	if len(st.Keys) != 1 {
		return errorResult(CodeUnknown, StateGeneral, "mycached: INSERT needs exactly one key")
	}
	key, res := fullKey(ns, st.Keys[0])
	if res.IsError() {
		return res
	}
	if len(st.Value) > opts.MaxBytes {
		return errorResult(CodeUnknown, StateGeneral, fmt.Sprintf(
			"mycached: value of %d bytes is over the kv limit of %d bytes (--kv-max-bytes)",
			len(st.Value), opts.MaxBytes))
	}
	// memcached cannot store the pair raw if it exceeds the item size,
	// and chunking would make it unreadable to other memcached clients.
	if limit := s.ItemSizeMax(ctx); limit > 0 && len(key)+len(st.Value) > limit-ItemOverhead {
		return tooLarge(len(st.Value), len(key), limit)
	}
	if err := s.Set(ctx, key, st.Value, st.TTL); err != nil {
		if errors.Is(err, ErrTooLargeForMemory) {
			return errorResult(CodeUnknown, StateGeneral, fmt.Sprintf(
				"mycached: value of %d bytes does not fit in the in-process cache; raise --cache-memory or store a smaller value", len(st.Value)))
		}
		if errors.Is(err, ErrTooLarge) {
			return tooLarge(len(st.Value), len(key), s.ItemSizeMax(ctx))
		}
		return storeError(opts, "INSERT", err)
	}
	return Result{Affected: 1}
}

// tooLarge is the error for a value of n bytes, under a key of keyLen,
// over memcached's item size limit (limit bytes, 0 if unknown).
func tooLarge(n, keyLen, limit int) Result {
	have := "its item size limit"
	if limit > 0 {
		have = fmt.Sprintf("its item size limit of %d bytes, less %d kept for the item header and the key's %d bytes (at most %d bytes of value)",
			limit, ItemOverhead, keyLen, max(limit-ItemOverhead-keyLen, 0))
	}
	return errorResult(CodeUnknown, StateGeneral, fmt.Sprintf(
		"mycached: value of %d bytes does not fit in memcached, %s; start memcached with a larger -I (for example -I 16m) or store a smaller value",
		n, have))
}

func execSelect(ctx context.Context, s Store, opts Options, ns string, st *Stmt) Result {
	keys, userKeys, res := selectKeys(ns, st)
	if res.IsError() {
		return res
	}
	vals, held, err := getBounded(ctx, s, keys, opts, maxValue(ctx, s, opts))
	if err != nil {
		return boundedError(opts, "SELECT", err)
	}
	out := SelectResult(userKeys, vals, nil)
	out.held, out.replies = held, opts.Replies
	return out
}

// boundedError is the result for getBounded's error err in a statement
// named what.
func boundedError(opts Options, what string, err error) Result {
	switch {
	case errors.Is(err, errReplyTooLarge):
		return replyTooLarge(opts)
	case errors.Is(err, errNoRoom):
		return errorResult(CodeOutOfResources, StateGeneral, "mycached: large replies waiting on their clients hold all of --fill-memory; try again")
	}
	return storeError(opts, what, err)
}

// maxValue is the most bytes one stored value may have: memcached's item
// size limit or, for the in-process tier, the largest value INSERT takes.
func maxValue(ctx context.Context, s Store, opts Options) int {
	if n := s.ItemSizeMax(ctx); n > 0 {
		return n
	}
	return opts.MaxBytes
}

// errReplyTooLarge is getBounded's error past its bound, errNoRoom its
// error when Options.Replies has no room for what it read.
var (
	errReplyTooLarge = errors.New("kv: reply too large")
	errNoRoom        = errors.New("kv: no room for the reply")
)

// batchBytes is about how many bytes of values getBounded asks for at
// once, once it knows how large they are; firstBatch is how many keys
// it asks for before it does.
const (
	batchBytes = 16 << 20
	firstBatch = 8
)

// getBounded reads keys in batches, and gives up with errReplyTooLarge as
// soon as the values read come to more than opts.MaxReplyBytes. A batch is
// sized from the values read so far, so that a list of large values is
// not read all at once before the bound is checked. Keys absent or small
// at first make batches large, so a batch also holds no more keys than
// values of the largest size one may have (maxValue bytes) could fill
// twice what is left of the bound: the values read never come to more
// than twice the bound and one value.
//
// Once the values read come to more than SmallReply bytes, they are taken
// from opts.Replies as each batch comes (held is what was taken): many
// SELECTs at once cannot together hold more than it, and the one that
// finds no room gives back what it took and fails with errNoRoom.
func getBounded(ctx context.Context, s Store, keys []string, opts Options, maxValue int) (vals [][]byte, held int64, err error) {
	limit := opts.MaxReplyBytes
	defer func() {
		if err != nil && held > 0 {
			opts.Replies.Give(held)
			held = 0
		}
	}()
	vals = make([][]byte, 0, len(keys))
	total, batch := 0, firstBatch
	for len(vals) < len(keys) {
		if maxValue > 0 {
			batch = min(batch, max(1, (2*limit-total)/maxValue))
		}
		next := keys[len(vals):min(len(vals)+batch, len(keys))]
		got, err := s.GetMulti(ctx, next)
		if err != nil {
			return nil, held, err
		}
		for _, v := range got {
			total += len(v)
		}
		if opts.Replies != nil && total > SmallReply {
			n := int64(total) - held
			if !opts.Replies.Take(n) {
				return nil, held, errNoRoom
			}
			held += n
		}
		if total > limit {
			return nil, held, errReplyTooLarge
		}
		vals = append(vals, got...)
		batch = min(getBatch, max(1, batchBytes/max(1, total/len(vals))))
	}
	return vals, held, nil
}

// replyTooLarge is the error for a SELECT whose values do not fit one
// reply.
func replyTooLarge(opts Options) Result {
	return errorResult(CodeUnknown, StateGeneral, fmt.Sprintf("mycached: the values asked for come to more than %d bytes; ask for fewer keys", opts.MaxReplyBytes))
}

// SelectKeys returns the store keys a SELECT of st reads (each once, in
// the order first asked for) and the user's keys they answer, or an error
// result. It is Exec's first half for a caller that reads the keys
// itself; SelectResult is the second.
func SelectKeys(opts Options, namespace string, st *Stmt) (keys []string, userKeys [][]byte, res Result) {
	if st.Op != OpSelect || st.Params > 0 {
		return nil, nil, ErrorResult(ErrUnbound)
	}
	return selectKeys(opts.withDefaults().Prefix+namespace, st)
}

func selectKeys(ns string, st *Stmt) ([]string, [][]byte, Result) {
	if len(st.Keys) == 0 {
		return nil, nil, errorResult(CodeUnknown, StateGeneral, "mycached: SELECT needs at least one key")
	}
	if st.extraKeys > 0 {
		return nil, nil, errorResult(CodeUnknown, StateGeneral, fmt.Sprintf("mycached: SELECT takes at most %d keys, not %d; ask for fewer", MaxSelectKeys, len(st.Keys)+st.extraKeys))
	}
	// One row per distinct key, in the order first asked for.
	keys := make([]string, 0, len(st.Keys))
	userKeys := make([][]byte, 0, len(st.Keys))
	var seen map[string]bool // for long lists; short ones are searched
	if len(st.Keys) > 8 {
		seen = make(map[string]bool, len(st.Keys))
	}
	for _, k := range st.Keys {
		key, res := fullKey(ns, k)
		if res.IsError() {
			return nil, nil, res
		}
		if seen != nil {
			if seen[key] {
				continue
			}
			seen[key] = true
		} else if slices.Contains(keys, key) {
			continue
		}
		keys = append(keys, key)
		userKeys = append(userKeys, k)
	}
	return keys, userKeys, Result{}
}

// SelectResult is the answer to a SELECT of userKeys, given the values
// read for their store keys (nil for a key that is absent) or the read's
// error.
func SelectResult(userKeys [][]byte, vals [][]byte, err error) Result {
	if err != nil {
		return storeError(Options{}, "SELECT", err)
	}
	res := Result{Columns: Columns(), IsRows: true}
	for i, v := range vals {
		if v != nil {
			res.Rows = append(res.Rows, [2][]byte{userKeys[i], v})
		}
	}
	return res
}

func execDelete(ctx context.Context, s Store, opts Options, ns string, st *Stmt) Result {
	if len(st.Keys) != 1 {
		return errorResult(CodeUnknown, StateGeneral, "mycached: DELETE needs exactly one key")
	}
	key, res := fullKey(ns, st.Keys[0])
	if res.IsError() {
		return res
	}
	n, err := s.DeleteMulti(ctx, []string{key})
	if err != nil {
		return storeError(opts, "DELETE", err)
	}
	return Result{Affected: uint64(n)}
}

// listKeys returns the full keys under ns, sorted so that SELECT * is
// stable. It drops keys outside ns in case a Store matches loosely.
func listKeys(ctx context.Context, s Store, ns string) ([]string, error) {
	keys, err := s.Keys(ctx, ns)
	if err != nil {
		return nil, err
	}
	out := keys[:0:0]
	for _, k := range keys {
		if len(k) > len(ns) && strings.HasPrefix(k, ns) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

func execSelectAll(ctx context.Context, s Store, opts Options, ns string) Result {
	keys, err := listKeys(ctx, s, ns)
	if err != nil {
		return storeError(opts, "SELECT *", err)
	}
	vals, held, err := getBounded(ctx, s, keys, opts, maxValue(ctx, s, opts))
	if err != nil {
		return boundedError(opts, "SELECT *", err)
	}
	res := Result{Columns: Columns(), IsRows: true, held: held, replies: opts.Replies}
	// A key deleted or expired since Keys ran is simply absent.
	for i, v := range vals {
		if v != nil {
			res.Rows = append(res.Rows, [2][]byte{[]byte(keys[i][len(ns):]), v})
		}
	}
	return res
}

func execDrop(ctx context.Context, s Store, opts Options, ns string) Result {
	keys, err := listKeys(ctx, s, ns)
	if err != nil {
		return storeError(opts, "DROP", err)
	}
	n, err := s.DeleteMulti(ctx, keys)
	if err != nil {
		return storeError(opts, fmt.Sprintf("DROP (after removing %d pairs)", n), err)
	}
	return Result{Affected: uint64(n)}
}

// fullKey validates a user key and returns it namespaced. memcached's
// rules apply to the whole key, since that is what it stores.
func fullKey(ns string, k []byte) (string, Result) {
	if len(k) == 0 {
		return "", errorResult(CodeUnknown, StateGeneral, "mycached: kv key must not be empty")
	}
	if len(ns)+len(k) > MaxKeyLen {
		return "", errorResult(CodeUnknown, StateGeneral, fmt.Sprintf(
			"mycached: kv key of %d bytes is too long: with its %d-byte prefix %q it exceeds memcached's %d-byte limit",
			len(k), len(ns), ns, MaxKeyLen))
	}
	for i, c := range k {
		if c <= ' ' || c == 0x7f {
			return "", errorResult(CodeUnknown, StateGeneral, fmt.Sprintf(
				"mycached: kv key must not contain whitespace or control bytes (byte 0x%02x at position %d)", c, i))
		}
	}
	key := ns + string(k)
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; c <= ' ' || c == 0x7f {
			return "", errorResult(CodeUnknown, StateGeneral, fmt.Sprintf(
				"mycached: kv namespace %q contains whitespace or control bytes", ns))
		}
	}
	return key, Result{}
}

// storeError reports a failure of the cache tier during op. A statement
// that ran out of time says which bound it hit, since that is what to
// change if the cache tier is merely slow.
func storeError(opts Options, op string, err error) Result {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		if op == "INSERT" || op == "DELETE" || strings.HasPrefix(op, "DROP") {
			// The command may have reached the cache tier, and may yet
			// be applied.
			return errorResult(CodeUnknown, StateGeneral, fmt.Sprintf(
				"mycached: kv %s timed out: the cache tier did not answer within %v (--kv-timeout); it may or may not have been applied", op, opts.withDefaults().Timeout))
		}
		return errorResult(CodeUnknown, StateGeneral, fmt.Sprintf(
			"mycached: kv %s failed: the cache tier did not answer within %v (--kv-timeout)", op, opts.withDefaults().Timeout))
	}
	return errorResult(CodeUnknown, StateGeneral, fmt.Sprintf("mycached: kv %s failed: %v", op, err))
}
