package kvproxy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/kv"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

func TestCheckPrefix(t *testing.T) {
	for _, p := range []string{
		"", "q", "g", "i", "q:", "g:", "i:", "g:kv:", "i:c:", "q:x",
		"my kv:", "kv\t", "kv\x00", "kv\x7f", "\n", strings.Repeat("k", MaxPrefixLen+1),
	} {
		if err := CheckPrefix(p); !errors.Is(err, ErrPrefix) {
			t.Errorf("CheckPrefix(%q) = %v, want ErrPrefix", p, err)
		}
	}
	for _, p := range acceptedPrefixes {
		if err := CheckPrefix(p); err != nil {
			t.Errorf("CheckPrefix(%q) = %v, want nil", p, err)
		}
	}
}

var acceptedPrefixes = []string{
	"kv:", "kv", "k", "Q:", "qq:", "gq:", "iq", "%", "~", ":", "app/kv:", "\u00fc:", strings.Repeat("k", MaxPrefixLen),
}

// TestAcceptedPrefixesFormKeys: under any prefix CheckPrefix accepts, in
// the shared namespace and in any user's, a one-byte key and the longest
// key that fits are keys the store takes; none is refused as reserved or
// malformed.
func TestAcceptedPrefixesFormKeys(t *testing.T) {
	st := store.New(store.Options{})
	defer st.Close()
	ctx := context.Background()
	users := []string{"", "alice", "ali:ce", "q:", "a b", strings.Repeat("\u00e9", 80)}
	for _, p := range acceptedPrefixes {
		nss := []string{""}
		for _, u := range users {
			nss = append(nss, kv.UserNamespace(u))
		}
		for _, ns := range nss {
			for _, key := range []string{"x", ":", strings.Repeat("y", kv.MaxKeyLen-len(p)-len(ns))} {
				full := p + ns + key
				if err := st.RawSet(ctx, full, []byte("v"), 0); err != nil {
					t.Errorf("prefix %q, namespace %q, key of %d bytes: the store refuses %q: %v", p, ns, len(key), full, err)
				}
			}
		}
	}
}
