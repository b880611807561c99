package kvproxy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mycached/mycached/mysqlproxy/internal/kv"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// ErrPrefix means a kv prefix cannot namespace kv pairs.
var ErrPrefix = errors.New("kvproxy: unusable kv prefix")

// MaxPrefixLen is the longest kv prefix: it leaves room for the longest
// per-user namespace and a key of one byte under memcached's 250-byte
// limit.
const MaxPrefixLen = kv.MaxKeyLen - (kv.MaxUserPart + 1) - 1

// CheckPrefix reports why prefix cannot namespace kv pairs, wrapping
// ErrPrefix: it is empty, it overlaps a prefix the cache reserves (one
// begins the other, so that some kv key would be, or could list, a query
// entry, a generation or an internal item), or it cannot begin a legal
// memcached key (whitespace, control bytes, or too long).
func CheckPrefix(prefix string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrPrefix, prefix, fmt.Sprintf(format, args...))
	}
	if prefix == "" {
		return bad("it must not be empty, or kv pairs would share the cache's own namespaces")
	}
	reserved := store.ReservedPrefixes()
	names := make([]string, 0, len(reserved))
	for r := range reserved {
		names = append(names, r)
	}
	slices.Sort(names)
	for _, r := range names {
		if strings.HasPrefix(prefix, r) || strings.HasPrefix(r, prefix) {
			return bad("it overlaps %q, which mycached reserves for %s; choose another, such as %q",
				r, reserved[r], kv.DefaultPrefix)
		}
	}
	for i := 0; i < len(prefix); i++ {
		if c := prefix[i]; c <= ' ' || c == 0x7f {
			return bad("byte 0x%02x at position %d: memcached keys hold no whitespace or control bytes", c, i)
		}
	}
	if len(prefix) > MaxPrefixLen {
		return bad("%d bytes is more than %d, which leaves room for a per-user namespace and a key within memcached's %d-byte keys",
			len(prefix), MaxPrefixLen, kv.MaxKeyLen)
	}
	return nil
}
