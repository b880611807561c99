package kv

import (
	"reflect"
	"strings"
	"testing"
)

// adversarialUsers are user names built to make namespaces meet: names
// with ":" (which once ended the namespace early), names that spell
// another's escaped or hashed form, long names, unicode in two
// normalizations, and bytes that are not memcached-legal.
var adversarialUsers = append([]string{
	"", "ali", "ali:ce", "ali:", ":", "::", ":ce", "ali::ce",
	"ali%3Ace", "ali%3ace", "ali%253Ace", "%", "%%", "%25", "%3A",
	"a b", "a%20b", "a+b", "a\tb", "a\nb", "\x00", "\x7f", "\xff",
	"~", "~abc", "-", ".", "_",
	"\u00e9", "e\u0301", "\u65e5\u672c", "\U0001F600",
	strings.Repeat("a", MaxUserPart), strings.Repeat("a", MaxUserPart+1),
	strings.Repeat("x", 100) + "1", strings.Repeat("x", 100) + "2",
	strings.Repeat("\u00fc", 80), strings.Repeat(":", 80),
	strings.Repeat("%", 21), strings.Repeat("%", 22), // 63 and 66 bytes escaped
},
	// A name that spells the hashed form of another.
	strings.TrimSuffix(UserNamespace(strings.Repeat("x", 100)+"1"), ":"),
)

func TestUserNamespaceDocumentedForm(t *testing.T) {
	for user, want := range map[string]string{
		"alice":                 "alice:",
		"ali:ce":                "ali%3Ace:",
		"50%":                   "50%25:",
		"a b":                   "a%20b:",
		"":                      ":",
		"\u00fc":                "%C3%BC:",
		"~x":                    "%7Ex:",
		"Bob.Smith_2-x":         "Bob.Smith_2-x:",
		strings.Repeat("a", 64): strings.Repeat("a", 64) + ":",
		// echo -n aaaa...(65) | sha256sum, first 40 hex digits
		strings.Repeat("a", 65): "~635361c48bb9eab14198e76ea8ab7f1a41685d6a:",
	} {
		if got := UserNamespace(user); got != want {
			t.Errorf("UserNamespace(%q) = %q, want %q", user, got, want)
		}
	}
}

// TestUserNamespaceInjective: no two users share a namespace, none's
// namespace begins another's (so a listing by prefix stays in one), and
// each is a legal piece of a memcached key with room for keys.
func TestUserNamespaceInjective(t *testing.T) {
	seen := map[string]string{}
	for _, u := range adversarialUsers {
		ns := UserNamespace(u)
		if other, dup := seen[ns]; dup {
			t.Errorf("users %q and %q share the namespace %q", u, other, ns)
		}
		seen[ns] = u
		checkNamespaceLegal(t, u, ns)
	}
	for a, ua := range seen {
		for b, ub := range seen {
			if a != b && strings.HasPrefix(a+"key", b) {
				t.Errorf("user %q's keys (%q...) lie inside user %q's namespace %q", ua, a, ub, b)
			}
		}
	}
}

func checkNamespaceLegal(t *testing.T, user, ns string) {
	t.Helper()
	if len(ns) > MaxUserPart+1 {
		t.Errorf("UserNamespace(%q) = %q: %d bytes, want at most %d", user, ns, len(ns), MaxUserPart+1)
	}
	if strings.Index(ns, ":") != len(ns)-1 {
		t.Errorf("UserNamespace(%q) = %q: want one \":\", at the end", user, ns)
	}
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; c <= ' ' || c >= 0x7f {
			t.Errorf("UserNamespace(%q) = %q: byte 0x%02x is not plain ASCII", user, ns, c)
		}
	}
}

// FuzzUserNamespace: for any two distinct names, the namespaces differ
// and neither's keys lie inside the other's.
func FuzzUserNamespace(f *testing.F) {
	for i, u := range adversarialUsers {
		f.Add(u, adversarialUsers[(i+1)%len(adversarialUsers)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		na, nb := UserNamespace(a), UserNamespace(b)
		checkNamespaceLegal(t, a, na)
		if a == b {
			return
		}
		if strings.HasPrefix(na+"k", nb) || strings.HasPrefix(nb+"k", na) {
			t.Errorf("users %q and %q: namespaces %q and %q meet", a, b, na, nb)
		}
	})
}

// TestExecUserNamespacesApart is the reported collision and its kin: user
// "ali" reading, overwriting and dropping "ali:ce"'s pair "token" through
// the key "ce:token". Each user sees only their own pairs.
func TestExecUserNamespacesApart(t *testing.T) {
	s := newFakeStore()
	o := Options{}
	as := func(user, sql string) Result { t.Helper(); return run(t, s, o, UserNamespace(user), sql) }
	wantOK(t, as("ali:ce", `INSERT "token" = "secret"`), 1)
	if got := rows(t, as("ali", `SELECT "ce:token"`)); len(got) != 0 {
		t.Errorf("ali reads ali:ce's pair: %q", got)
	}
	wantOK(t, as("ali", `INSERT "ce:token" = "forged"`), 1)
	if got, want := rows(t, as("ali:ce", `SELECT "token"`)), []string{"token=secret"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ali:ce's pair after ali's INSERT: got %q, want %q", got, want)
	}
	if got, want := rows(t, as("ali", `SELECT *`)), []string{"ce:token=forged"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ali's SELECT *: got %q, want %q", got, want)
	}
	wantOK(t, as("ali", `DELETE "ce:token"`), 1)
	wantOK(t, as("ali", `DROP`), 0)
	if got, want := rows(t, as("ali:ce", `SELECT *`)), []string{"token=secret"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ali:ce's SELECT * after ali's DROP: got %q, want %q", got, want)
	}

	// Every adversarial user writes the same key; each reads back only
	// their own pair, and a DROP takes only the dropper's.
	for _, u := range adversarialUsers {
		wantOK(t, run(t, s, o, UserNamespace(u), `INSERT "k" = ?`, "of "+u), 1)
	}
	for i, u := range adversarialUsers {
		want := []string{"k=of " + u}
		if u == "ali:ce" {
			want = []string{"k=of " + u, "token=secret"}
		}
		if got := rows(t, as(u, `SELECT *`)); !reflect.DeepEqual(got, want) {
			t.Errorf("user %q: SELECT * = %q, want %q", u, got, want)
		}
		if i%2 == 0 {
			wantOK(t, as(u, `DROP`), uint64(len(want)))
		}
	}
	for i, u := range adversarialUsers {
		got := rows(t, as(u, `SELECT "k"`))
		if i%2 == 0 && len(got) != 0 {
			t.Errorf("user %q: after their DROP, SELECT k = %q", u, got)
		}
		if i%2 == 1 && !reflect.DeepEqual(got, []string{"k=of " + u}) {
			t.Errorf("user %q: after others' DROPs, SELECT k = %q, want their own pair", u, got)
		}
	}
}
