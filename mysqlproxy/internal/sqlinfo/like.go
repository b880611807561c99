package sqlinfo

// LikeFold reports whether s matches the SQL LIKE pattern, with % and _
// as wildcards and \ escaping the byte after it, ignoring ASCII case, as
// SHOW ... LIKE compares names. It backtracks only to the last %, so a
// pattern of many % costs at most len(s) * len(pattern) steps.
func LikeFold(s, pattern string) bool {
	si, pi := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(pattern) {
			c, n := pattern[pi], 1
			switch {
			case c == '%':
				starP, starS = pi, si
				pi++
				continue
			case c == '_':
				si, pi = si+1, pi+1
				continue
			case c == '\\' && pi+1 < len(pattern):
				c, n = pattern[pi+1], 2
			}
			if lowerByte(c) == lowerByte(s[si]) {
				si, pi = si+1, pi+n
				continue
			}
		}
		if starP < 0 {
			return false
		}
		// The last % takes one more byte.
		starS++
		si, pi = starS, starP+1
	}
	for pi < len(pattern) && pattern[pi] == '%' {
		pi++
	}
	return pi == len(pattern)
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
