package kv

import (
	"crypto/sha256"
	"encoding/hex"
)

// A per-user namespace must keep every user's pairs apart whatever the
// user names: it goes between the prefix and the key, and a key may
// contain anything a name may, ":" included. So the user part is encoded
// so that it never contains ":" and no two names encode alike: then a
// namespace ends at its first ":", no namespace is a prefix of another's
// keys, and SELECT * and DROP, which list by prefix, stay inside it.

// MaxUserPart is the longest user part of a per-user namespace, before
// its ":". Longer escaped names are hashed to fit, so that a long name
// still leaves room for keys under memcached's 250-byte limit.
const MaxUserPart = 64

// UserNamespace returns the per-user namespace of user, which goes
// between Options.Prefix and each key. Any memcached client can compute
// it:
//
//   - bytes other than ASCII letters, digits, ".", "_" and "-" are
//     percent-encoded, as %XX in upper-case hex: user "alice" has the
//     namespace "alice:", user "ali:ce" "ali%3Ace:", user "" ":";
//   - when that is longer than MaxUserPart bytes, the namespace is "~"
//     and the first 40 hex digits of the SHA-256 of the user name, then
//     ":". An escaped name never contains "~", so the two forms never
//     meet.
func UserNamespace(user string) string {
	b := make([]byte, 0, len(user)+1)
	for i := 0; i < len(user); i++ {
		c := user[i]
		if plainByte(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
	}
	if len(b) > MaxUserPart {
		sum := sha256.Sum256([]byte(user))
		b = append(b[:0], '~')
		b = hex.AppendEncode(b, sum[:20])
	}
	return string(append(b, ':'))
}

const hexDigits = "0123456789ABCDEF"

// plainByte reports whether c stands for itself in a namespace.
func plainByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}
