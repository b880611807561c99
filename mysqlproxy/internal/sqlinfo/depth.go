package sqlinfo

// maxParseDepth bounds how deep the parse of a text may nest, as
// estimated by tooDeep; maxParseLen bounds its length. The parser and the
// walks over its tree recurse once per level: a text of 200,000 chained
// operators would take seconds and gigabytes, which the server refuses
// in a millisecond (error 1436). Such a text is not parsed: it is
// classified by its first keywords, as one the parser rejects.
//
// maxParseItems bounds its breadth: the parse takes about 1 KiB for each
// item of a list (an IN list, a VALUES row, a select list), so a 4 MB
// IN list of 2,000,000 numbers took gigabytes. Such a text is read by its
// first keywords too: a read is relayed, a write invalidates everything.
const (
	maxParseDepth = 4000
	maxParseLen   = 8 << 20
	maxParseItems = 100000
)

// tooDeep reports whether parsing sql may nest deeper than limit: at
// some point, the parentheses open plus the operators chained since the
// last comma or parenthesis at that level; or hold more than
// maxParseItems list items. It reads each byte once,
// skipping quoted strings and identifiers, and overestimates rather than
// under.
func tooDeep(sql string, limit int) bool {
	var outer []int  // the operators chained at each enclosing level
	run, sum := 0, 0 // chained at this level; open levels and their chains
	items := 0       // the list items (commas) so far
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch c {
		case '\'', '"', '`':
			// To the closing quote; a backslash escapes the next byte
			// (an overestimate where it does not).
			for i++; i < len(sql) && sql[i] != c; i++ {
				if sql[i] == '\\' {
					i++
				}
			}
			continue
		case '#':
			i = skipLine(sql, i)
			continue
		case '/':
			if i+1 < len(sql) && sql[i+1] == '*' {
				if i+2 < len(sql) && (sql[i+2] == '!' || sql[i+2] == 'M') {
					// An executable comment: its text is read.
					i += 2
					continue
				}
				i = skipBlockComment(sql, i) - 1
				continue
			}
			run++
		case '-':
			if i+2 < len(sql) && sql[i+1] == '-' && (sql[i+2] <= ' ') || i+2 == len(sql) && sql[i+1] == '-' {
				i = skipLine(sql, i)
				continue
			}
			run++
		case '(':
			outer = append(outer, run)
			sum += run + 1
			run = 0
		case ')':
			if n := len(outer); n > 0 {
				run = outer[n-1]
				outer = outer[:n-1]
				sum -= run + 1
			}
		case ',', ';':
			run = 0
			if items++; items > maxParseItems {
				return true
			}
		case '+', '*', '%', '^', '&', '|', '~', '!', '<', '>', '=':
			run++
		default:
			if isWordByte(c) && (i == 0 || !isWordByte(sql[i-1])) {
				j := i
				for j < len(sql) && isWordByte(sql[j]) {
					j++
				}
				if chainingWord(sql[i:j]) {
					run++
				}
				i = j - 1
			}
		}
		if sum+run > limit {
			return true
		}
	}
	return false
}

// chainingWord reports whether w is an operator word that nests a parse
// when chained: AND, OR, XOR, NOT, CASE, WHEN, DIV, MOD, LIKE, BETWEEN.
func chainingWord(w string) bool {
	if len(w) < 2 || len(w) > 7 {
		return false
	}
	for _, k := range [...]string{"AND", "OR", "XOR", "NOT", "CASE", "WHEN", "DIV", "MOD", "LIKE", "BETWEEN"} {
		if len(w) == len(k) && equalFoldASCII(k, w) {
			return true
		}
	}
	return false
}
