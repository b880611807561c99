package sqlinfo

// This file answers a new text of a known shape from its token skeleton
// alone, without computing its normalized digest. The digest memo already
// requires equal skeletons before it substitutes literals into a template;
// the skeleton memo goes one step further and takes the digest from the
// shape too, since the digest is a function of the skeleton with a few
// exceptions, each handled here:
//
//   - The digest keeps an integer that follows ORDER BY or GROUP BY
//     verbatim ("order by 1"), so every integer after a "by" token goes into
//     the key verbatim.
//   - The digest keeps a string whose content is "*" verbatim, and skips
//     FORCE/USE/IGNORE INDEX (...) up to a token reading ")", which a string
//     can spell: texts with a string reading "*" or an INDEX word are left
//     to the digest.
//   - Optimizer hints (/*+ ... */) are part of the digest: they go into the
//     key verbatim with their position. Other comments are dropped by both
//     the digest and the skeleton, but only plain ones ("/* ", "# ", "-- ")
//     are trusted to be read alike; anything else (/*!, /*M!, /*T!, \f) is
//     left to the digest.
//   - X'..', B'..', N'..' and _charset'..' are one token to the digest and
//     an invalid one stops it, so a string glued to a word is left to the
//     digest.
//
// A skeleton is checked once more when it is memoized: a copy of the text
// with other literals of the same classes must have the same digest.

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
)

// skelEntry is the analysis of the texts of one skeleton key.
type skelEntry struct {
	info *Info
	tmpl *template // nil where info is shared as is
	hint bool      // hasNoCacheHint of the texts, read from raw text
	// refused marks a key whose skeleton does not determine the digest.
	refused bool
}

// answer answers sql, whose scan sc gave e's key, from e.
func (e *skelEntry) answer(sql string, sc *textScan) (*Info, bool) {
	if !e.takes(sql) {
		return nil, false
	}
	if e.tmpl == nil {
		return e.info, true
	}
	return e.tmpl.instantiate(e.info, sql, sc)
}

// shapes reports whether e.info is the shape of sql, whose scan sc gave
// e's key: its analysis in every field but a template's Point and Insert
// rows, which are another text's.
func (e *skelEntry) shapes(sql string, sc *textScan) bool {
	return e.takes(sql) && (e.tmpl == nil || e.tmpl.matches(sc))
}

// takes reports whether e answers for sql, a text of its key.
func (e *skelEntry) takes(sql string) bool {
	return !e.refused && hasNoCacheHint(sql) == e.hint
}

// skelKey appends to sc.key the skeleton-memo key of sql, whose scan is sc,
// and reports false when sql's skeleton may not determine its digest.
func skelKey(sc *textScan, sql string) bool {
	if sc.odd {
		return false
	}
	for _, t := range sc.toks {
		if t.class != litSingle && t.class != litDouble {
			continue
		}
		if t.off > 0 && isWordByte(sql[t.off-1]) {
			return false
		}
		// A body reading "*" is '*' or '\*'; shorter than three bytes
		// with a star covers both.
		if body := sql[t.off+1 : t.end-1]; len(body) <= 2 && strings.IndexByte(body, '*') >= 0 {
			return false
		}
	}
	sc.kept = sc.kept[:0]
	k := sc.key[:0]
	k = strconv.AppendInt(k, int64(len(sc.skel)), 10)
	k = append(k, ':')
	k = append(k, sc.skel...)
	k = append(k, sc.hints...)
	s := sc.skel
	afterBy := false
	lit := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == litMark:
			if i+1 >= len(s) || lit >= len(sc.toks) {
				return false
			}
			if afterBy && s[i+1] == litInt {
				t := sc.toks[lit]
				k = append(k, 'B')
				k = strconv.AppendInt(k, int64(lit), 10)
				k = append(k, ',')
				k = strconv.AppendInt(k, int64(t.end-t.off), 10)
				k = append(k, ':')
				k = append(k, sql[t.off:t.end]...)
				sc.kept = append(sc.kept, lit)
			}
			lit++
			i += 2
		case c == '`' || isWordByte(c):
			var w []byte
			if c == '`' {
				end, ok := quotedEnd(s, i, '`')
				if !ok {
					return false
				}
				w, i = s[i+1:end-1], end
			} else {
				j := i
				for j < len(s) && isWordByte(s[j]) {
					j++
				}
				w, i = s[i:j], j
			}
			if bytes.EqualFold(w, []byte("by")) {
				afterBy = true
			} else if bytes.EqualFold(w, []byte("index")) {
				return false
			}
		default:
			i++
		}
	}
	if lit != len(sc.toks) {
		return false
	}
	sc.key = k
	return true
}

// checkGap notes in sc what the whitespace and comments g, which precede
// skeleton offset len(sc.skel), hold: optimizer hints are kept verbatim,
// and any comment but a plain one marks the scan odd.
func (sc *textScan) checkGap(g string) {
	for i := 0; i < len(g); {
		c := g[i]
		switch {
		case isPlainSpace(c):
			i++
		case c == '#':
			i = skipLine(g, i)
		case c == '-' && i+1 < len(g) && g[i+1] == '-':
			if i+2 < len(g) && !isPlainSpace(g[i+2]) {
				sc.odd = true
				return
			}
			i = skipLine(g, i)
		case c == '/' && i+2 < len(g) && g[i+1] == '*' && (isPlainSpace(g[i+2]) || g[i+2] == '+'):
			end := skipBlockComment(g, i)
			if end < 4 || g[end-2:end] != "*/" || end-i < 4 {
				sc.odd = true
				return
			}
			if g[i+2] == '+' {
				sc.hints = append(sc.hints, 'H')
				sc.hints = strconv.AppendInt(sc.hints, int64(len(sc.skel)), 10)
				sc.hints = append(sc.hints, ',')
				sc.hints = strconv.AppendInt(sc.hints, int64(end-i), 10)
				sc.hints = append(sc.hints, ':')
				sc.hints = append(sc.hints, g[i:end]...)
			}
			i = end
		default:
			sc.odd = true
			return
		}
	}
}

func isPlainSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// skeletonDigestStable reports whether a copy of sql with its literals
// replaced by others of the same class, except those kept in the key, has
// the digest digest.
func skeletonDigestStable(sql string, sc *textScan, digest string) bool {
	var b strings.Builder
	prev := 0
	for k, t := range sc.toks {
		if slices.Contains(sc.kept, k) {
			continue
		}
		b.WriteString(sql[prev:t.off])
		switch t.class {
		case litInt:
			b.WriteString("73")
		case litBigInt:
			b.WriteString("73000000000000000000000")
		case litDecimal:
			b.WriteString("7.3")
		case litFloat:
			b.WriteString("7e3")
		case litSingle:
			b.WriteString("'v w'")
		case litDouble:
			b.WriteString(`"v w"`)
		default:
			return false
		}
		prev = t.end
	}
	b.WriteString(sql[prev:])
	d, ok := normalize(b.String())
	return ok && d == digest
}
