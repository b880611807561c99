package sqlinfo

// This file reads executable comments as the server does. MariaDB runs the
// body of /*! ... */ and /*M! ... */ as code, unless the comment names a
// version above its own (/*!50100 ...*/, /*M!100500 ...*/), and reads
// /*T! ... */ as a plain comment. The parser mycached uses reads them
// otherwise: it takes /*M! for a plain comment, /*T! for code, and ignores
// version numbers. So a text with any of them is rewritten, byte for byte in
// place, into the code the server runs before it is parsed, and is never
// answered from the digest memo, whose digests and shapes do not tell the
// versions apart.

import (
	"strings"
	"sync/atomic"
)

// serverVersion is the backend's version as MariaDB compares it with a
// comment's (10.11.19 is 101119), or 0 while it is unknown.
var serverVersion atomic.Int64

// SetServerVersion records the backend's version, from the version string
// of its greeting ("5.5.5-10.11.19-MariaDB-..." or "10.11.19-MariaDB").
// Until it is known, a text whose executable comment names a version is
// analysed as unreadable.
func SetServerVersion(s string) {
	if v := ParseServerVersion(s); v > 0 {
		serverVersion.Store(int64(v))
	}
}

// ServerVersion returns the backend's version as SetServerVersion
// recorded it (10.11.19 is 101119), or 0 while it is unknown.
func ServerVersion() int { return int(serverVersion.Load()) }

// ParseServerVersion returns the comment version of a server version
// string, or 0 when it does not read as one.
func ParseServerVersion(s string) int {
	s = strings.TrimPrefix(s, "5.5.5-")
	var parts [3]int
	n, i := 0, 0
	for n < 3 {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' && i-start < 3 {
			parts[n] = parts[n]*10 + int(s[i]-'0')
			i++
		}
		if i == start {
			return 0
		}
		n++
		if n < 3 {
			if i >= len(s) || s[i] != '.' {
				return 0
			}
			i++
		}
	}
	if parts[1] > 99 || parts[2] > 99 {
		return 0
	}
	return parts[0]*10000 + parts[1]*100 + parts[2]
}

// hasExecComment reports whether sql may hold a comment the parser reads
// otherwise than the server. A match inside a string only costs the slow
// path.
func hasExecComment(sql string) bool {
	i := strings.Index(sql, "/*")
	if i < 0 {
		return false
	}
	return strings.Contains(sql[i:], "/*!") || strings.Contains(sql[i:], "/*M!") || strings.Contains(sql[i:], "/*T!")
}

// execView returns sql as the server of version ver reads it: the markers
// of the executable comments it runs, and their closing */, turned into
// spaces, and the comments it skips blanked whole. Offsets are kept. ok is
// false where the server's reading is not certain: a comment names a
// version while ver is unknown, comments nest where the server would
// refuse them, or one is not closed. backslash tells whether a backslash
// escapes in strings (not under NO_BACKSLASH_ESCAPES).
func execView(sql string, ver int, backslash bool) (string, bool) {
	out := []byte(sql)
	n := len(sql)
	inExec := false
	blank := func(from, to int) {
		for k := from; k < to; k++ {
			if out[k] != '\n' {
				out[k] = ' '
			}
		}
	}
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case c == '\'' || c == '"':
			i = skipQuoted(sql, i, c, backslash)
		case c == '`':
			i = skipQuoted(sql, i, c, false)
		case c == '#':
			i = skipLine(sql, i)
		case c == '-' && i+1 < n && sql[i+1] == '-' && (i+2 == n || isSpaceOrCtl(sql[i+2])):
			i = skipLine(sql, i)
		case c == '*' && inExec && i+1 < n && sql[i+1] == '/':
			blank(i, i+2)
			inExec = false
			i += 2
		case c == '/' && i+1 < n && sql[i+1] == '*':
			j := i + 2
			maria := false
			switch {
			case j < n && sql[j] == '!':
				j++
			case j+1 < n && sql[j] == 'M' && sql[j+1] == '!':
				j += 2
				maria = true
			case j+1 < n && sql[j] == 'T' && sql[j+1] == '!':
				// A plain comment to the server, code to the parser.
				end, ok := skipPlainComment(sql, i)
				if !ok {
					return "", false
				}
				blank(i, end)
				i = end
				continue
			default:
				end, ok := skipPlainComment(sql, i)
				if !ok {
					return "", false
				}
				i = end
				continue
			}
			if inExec {
				return "", false
			}
			digits := 0
			for j+digits < n && digits < 6 && sql[j+digits] >= '0' && sql[j+digits] <= '9' {
				digits++
			}
			run := true
			if digits >= 5 {
				v := 0
				for _, d := range sql[j : j+digits] {
					v = v*10 + int(d-'0')
				}
				j += digits
				switch {
				case v == 0:
				case ver == 0:
					return "", false
				default:
					// MariaDB skips what /*! keeps for MySQL 5.7 and
					// later, which it is not.
					run = v <= ver && (maria || v < 50700 || v > 99999)
				}
			}
			if run {
				blank(i, j)
				inExec = true
				i = j
				continue
			}
			end, ok := skipSkippedComment(sql, j)
			if !ok {
				return "", false
			}
			blank(i, end)
			i = end
		default:
			i++
		}
	}
	if inExec {
		return "", false
	}
	return string(out), true
}

// skipPlainComment skips the comment opening at s[i], reporting false when
// it is not closed.
func skipPlainComment(s string, i int) (int, bool) {
	end := skipBlockComment(s, i)
	if end < 4+i || s[end-2:end] != "*/" {
		return end, false
	}
	return end, true
}

// skipSkippedComment skips the body, from s[j], of an executable comment
// the server does not run. The server lets one plain comment nest in it;
// deeper nesting, or no end, is not certain.
func skipSkippedComment(s string, j int) (int, bool) {
	depth := 1
	for k := j; k+1 < len(s); k++ {
		switch {
		case s[k] == '/' && s[k+1] == '*':
			if depth > 1 {
				return 0, false
			}
			depth++
			k++
		case s[k] == '*' && s[k+1] == '/':
			depth--
			k++
			if depth == 0 {
				return k + 1, true
			}
		}
	}
	return 0, false
}

// analyzeExec analyses a text with executable comments, through its view
// as the server reads it, bypassing the digest and skeleton memos. parseIn
// is the parser to use on the view.
func analyzeExec(sql string, backslash bool, parse func(view string) *Info) *Info {
	view, ok := execView(sql, int(serverVersion.Load()), backslash)
	if !ok {
		return unreadable(sql, "executable-comment")
	}
	info := parse(view)
	if info.Digest == "" {
		info.Digest, _ = normalize(view)
	}
	return info
}
