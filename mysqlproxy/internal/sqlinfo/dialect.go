package sqlinfo

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
)

// Dialect is how the server reads a session's statement texts: the
// sql_mode flags that change the lexer, and the client character set the
// bytes are in. The zero Dialect is the default: backslash escapes,
// double-quoted strings, UTF-8.
type Dialect struct {
	// NoBackslashEscapes: sql_mode NO_BACKSLASH_ESCAPES, \ is a character.
	NoBackslashEscapes bool
	// ANSIQuotes: sql_mode ANSI_QUOTES, "x" is an identifier.
	ANSIQuotes bool
	// Charset is character_set_client, lower-case; "" means utf8mb4.
	Charset string
	// Unknown: the sql_mode and charset are not known. Only texts that
	// read alike in every dialect are analysed.
	Unknown bool
	// NoSchema: the client set CLIENT_NO_SCHEMA, and the server reads
	// db.t as t in the session's database. A text that may qualify a
	// name (one with a '.') is not analysed.
	NoSchema bool
}

// DialectOf returns the dialect of a session whose sql_mode and
// character_set_client are these values (as the server reports them; ""
// for unknown sql_mode means the default).
func DialectOf(sqlMode, charset string) Dialect {
	d := Dialect{Charset: strings.ToLower(strings.Trim(charset, "'"))}
	if sqlMode != "" {
		m := strings.ToUpper(sqlMode)
		// ANSI implies ANSI_QUOTES; the server reports the expanded flags,
		// but a value set by the client may still name the combination.
		d.ANSIQuotes = hasFlag(m, "ANSI_QUOTES") || hasFlag(m, "ANSI")
		d.NoBackslashEscapes = hasFlag(m, "NO_BACKSLASH_ESCAPES")
	}
	return d
}

func hasFlag(mode, flag string) bool {
	for _, f := range strings.Split(strings.Trim(mode, "'"), ",") {
		if strings.TrimSpace(f) == flag {
			return true
		}
	}
	return false
}

// lexOptions returns how the lexer reads a text in d.
func (d Dialect) lexOptions() LexOptions {
	return LexOptions{NoBackslashEscapes: d.NoBackslashEscapes, ANSIQuotes: d.ANSIQuotes}
}

// utf8 reports whether the charset is one whose bytes the analysis reads
// as they are: UTF-8 in any of its names.
func (d Dialect) utf8() bool {
	switch d.Charset {
	case "", "utf8mb4", "utf8mb3", "utf8":
		return true
	}
	return false
}

// PlainFor reports whether sql reads in d as in the default dialect (see
// plainFor).
func (d Dialect) PlainFor(sql string) bool { return d.plainFor(sql) }

// plainFor reports whether sql reads in d as in the default dialect.
// Without a backslash or a double quote, the sql_mode flags change
// nothing the analysis reads; without a byte above 0x7F, neither does
// any charset a client may use.
func (d Dialect) plainFor(sql string) bool {
	if d.Unknown {
		return isASCII(sql) && !strings.ContainsAny(sql, "\\\"")
	}
	if (d.NoBackslashEscapes || d.ANSIQuotes) && strings.ContainsAny(sql, "\\\"") {
		return false
	}
	return d.utf8() || (asciiCompatible[d.Charset] && isASCII(sql))
}

// asciiCompatible are the client character sets in which a text of bytes
// below 0x80 means what it means in ASCII: every one the server accepts
// as character_set_client (ucs2, utf16 and utf32 are refused there).
var asciiCompatible = map[string]bool{
	"ascii": true, "binary": true, "latin1": true, "latin2": true, "latin5": true, "latin7": true,
	"cp1250": true, "cp1251": true, "cp1256": true, "cp1257": true, "cp850": true, "cp852": true,
	"cp866": true, "koi8r": true, "koi8u": true, "greek": true, "hebrew": true, "armscii8": true,
	"keybcs2": true, "macce": true, "macroman": true, "dec8": true, "hp8": true, "swe7": true,
	"geostd8": true, "tis620": true, "big5": true, "gbk": true, "gb2312": true, "gb18030": true,
	"sjis": true, "cp932": true, "ujis": true, "eucjpms": true, "euckr": true,
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// decoders turn a client character set's bytes into UTF-8, the character
// set of identifiers on the server and in the binlog. Multi-byte sets whose
// second bytes include 0x5C (big5, gbk, gb18030, sjis, cp932) must be
// decoded before lexing: there "\" may be half a character, not an escape.
var decoders = map[string]encoding.Encoding{
	"latin1":   charmap.Windows1252, // the server's latin1 is cp1252
	"latin2":   charmap.ISO8859_2,
	"latin5":   charmap.ISO8859_9,
	"latin7":   charmap.ISO8859_13,
	"greek":    charmap.ISO8859_7,
	"hebrew":   charmap.ISO8859_8,
	"cp1250":   charmap.Windows1250,
	"cp1251":   charmap.Windows1251,
	"cp1256":   charmap.Windows1256,
	"cp1257":   charmap.Windows1257,
	"cp850":    charmap.CodePage850,
	"cp852":    charmap.CodePage852,
	"cp866":    charmap.CodePage866,
	"koi8r":    charmap.KOI8R,
	"koi8u":    charmap.KOI8U,
	"macroman": charmap.Macintosh,
	"gbk":      simplifiedchinese.GBK,
	"gb2312":   simplifiedchinese.GBK, // EUC-CN, which GBK extends
	"gb18030":  simplifiedchinese.GB18030,
	"big5":     traditionalchinese.Big5,
	"sjis":     japanese.ShiftJIS,
	"cp932":    japanese.ShiftJIS,
	"ujis":     japanese.EUCJP,
	"eucjpms":  japanese.EUCJP,
	"euckr":    korean.EUCKR,
}

// toUTF8 returns sql, in charset cs, as UTF-8. It fails for a character
// set it cannot decode and for bytes that are not characters of it, where
// the server's reading of the text cannot be known.
func toUTF8(cs, sql string) (string, bool) {
	enc, ok := decoders[cs]
	if !ok {
		return "", false
	}
	if split, ok := serverSplits[cs]; ok {
		return splitToUTF8(enc, split, sql)
	}
	out, err := enc.NewDecoder().String(sql)
	if err != nil || strings.ContainsRune(out, utf8.RuneError) {
		return "", false
	}
	return out, true
}

// serverSplits tell, for the character sets whose multi-byte characters
// may end in an ASCII byte ("\", a quote), where the server's characters
// end, by its own rules (MariaDB's strings/ctype-*.c): a decoder's idea
// of the set may differ (Go's big5 takes HKSCS's lead bytes 0x81-0xA0 and
// 0xFA-0xFE, which the server reads as bytes of their own), and a
// backslash that ends a character for one escapes a quote for the other.
// A split returns the length of the character at the start of b: 1 for
// an ASCII byte, 0 for bytes that are no character of the set.
var serverSplits = map[string]func(b string) int{
	"big5": func(b string) int {
		return mb2(b, in(0xA1, 0xF9), func(c byte) bool { return in(0x40, 0x7E)(c) || in(0xA1, 0xFE)(c) })
	},
	"gbk": func(b string) int {
		return mb2(b, in(0x81, 0xFE), func(c byte) bool { return in(0x40, 0x7E)(c) || in(0x80, 0xFE)(c) })
	},
	"sjis":  sjisSplit,
	"cp932": sjisSplit,
	"gb18030": func(b string) int {
		if len(b) >= 4 && in(0x81, 0xFE)(b[0]) && in(0x30, 0x39)(b[1]) && in(0x81, 0xFE)(b[2]) && in(0x30, 0x39)(b[3]) {
			return 4
		}
		return mb2(b, in(0x81, 0xFE), func(c byte) bool { return in(0x40, 0x7E)(c) || in(0x80, 0xFE)(c) })
	},
}

// TrailBackslash reports whether a character of charset may end in the
// byte of a backslash (big5, gbk, sjis, cp932, gb18030): a reader that
// does not cut the text into the charset's characters takes it for an
// escape.
func TrailBackslash(charset string) bool {
	_, ok := serverSplits[strings.ToLower(strings.Trim(charset, "'"))]
	return ok
}

func sjisSplit(b string) int {
	if b[0] >= 0xA1 && b[0] <= 0xDF {
		return 1 // half-width katakana
	}
	return mb2(b, func(c byte) bool { return in(0x81, 0x9F)(c) || in(0xE0, 0xFC)(c) },
		func(c byte) bool { return in(0x40, 0x7E)(c) || in(0x80, 0xFC)(c) })
}

// mb2 is a split for a set of one-byte ASCII and two-byte characters.
func mb2(b string, head, tail func(byte) bool) int {
	switch {
	case b[0] < 0x80:
		return 1
	case len(b) >= 2 && head(b[0]) && tail(b[1]):
		return 2
	}
	return 0
}

func in(lo, hi byte) func(byte) bool {
	return func(c byte) bool { return c >= lo && c <= hi }
}

// splitToUTF8 decodes sql character by character as the server splits
// it. Bytes that are no character of the set, or a character the decoder
// does not read as one, fail.
func splitToUTF8(enc encoding.Encoding, split func(string) int, sql string) (string, bool) {
	var out strings.Builder
	dec := enc.NewDecoder()
	for i := 0; i < len(sql); {
		n := split(sql[i:])
		switch {
		case n == 0:
			return "", false
		case n == 1 && sql[i] < 0x80:
			out.WriteByte(sql[i])
		default:
			u, err := dec.String(sql[i : i+n])
			if r, size := utf8.DecodeRuneInString(u); err != nil || r == utf8.RuneError || size != len(u) {
				return "", false
			}
			out.WriteString(u)
		}
		i += n
	}
	return out.String(), true
}

// modeParsers hold parsers set to the sql_mode flags of each dialect,
// indexed by modeIndex.
var modeParsers [4]sync.Pool

func modeIndex(d Dialect) int {
	i := 0
	if d.NoBackslashEscapes {
		i |= 1
	}
	if d.ANSIQuotes {
		i |= 2
	}
	return i
}

func newModeParser(i int) *parser.Parser {
	p := parser.New()
	var m mysql.SQLMode
	if i&1 != 0 {
		m |= mysql.ModeNoBackslashEscapes
	}
	if i&2 != 0 {
		m |= mysql.ModeANSIQuotes
	}
	p.SetSQLMode(m)
	return p
}

// AnalyzeIn is Analyze for a session whose server reads texts in dialect
// d. A text that reads the same in every dialect takes Analyze's memoized
// path. Another is decoded to UTF-8 and parsed with d's sql_mode, every
// time; one that cannot be decoded, or that names a charset mycached
// cannot read, is analysed as unreadable: never cached, and a write that
// may touch anything.
func (a *Analyzer) AnalyzeIn(sql string, d Dialect) (info *Info) {
	if d.NoSchema && strings.IndexByte(sql, '.') >= 0 {
		return unreadable(sql, "no-schema")
	}
	if d.plainFor(sql) {
		return a.Analyze(sql)
	}
	defer func() {
		if recover() != nil {
			info = unanalyzable()
		}
	}()
	if d.Unknown {
		return unreadable(sql, "dialect-unknown")
	}
	text := sql
	if !d.utf8() && !isASCII(sql) {
		u, ok := toUTF8(d.Charset, sql)
		if !ok {
			return unreadable(sql, "charset:"+d.Charset)
		}
		text = u
	}
	if !(d.NoBackslashEscapes || d.ANSIQuotes) || !strings.ContainsAny(text, "\\\"") {
		return a.Analyze(text)
	}
	defer bigParse(text)()
	return a.parseIn(text, d)
}

// AnalyzeShapeIn is AnalyzeIn for a caller that may need no more than
// the text's shape: the fields that all the texts of its skeleton share
// (Kind, Cacheable, Digest, the tables read and written, the functions
// called), which the skeleton memo holds. When it holds sql's shape and
// enough says that will do, that is returned, with true: its Point and
// Insert rows are another text's. The text's literals are then not read
// into a template, nor is the result memoized as the text's.
func (a *Analyzer) AnalyzeShapeIn(sql string, d Dialect, enough func(shape *Info) bool) (*Info, bool) {
	if enough == nil || d.NoSchema && strings.IndexByte(sql, '.') >= 0 || !d.plainFor(sql) {
		return a.AnalyzeIn(sql, d), false
	}
	return a.analyze(sql, enough)
}

// unreadable is the analysis of a text whose meaning to the server
// mycached cannot know.
func unreadable(sql, why string) *Info {
	info := fallback(sql)
	info.Cacheable = false
	info.WhyNot = why
	info.Point, info.Insert, info.SetCols = nil, nil, nil
	if strings.Contains(strings.TrimRight(sql, " \t\r\n;"), ";") {
		// How the server splits the text is not known: a ';' anywhere
		// may end a statement, and the next may write anything.
		info.Kind = Other
	}
	switch info.Kind {
	case Select, Show, Begin, Commit, Rollback, Savepoint, Use:
	case Set:
		// The values cannot be read: the session's state is unknown.
		info.Sets = []SetVar{{Verbatim: true, Value: sql}}
	default:
		unmappedGlobal(info)
	}
	return info
}

// parseIn parses sql with the sql_mode flags of d, without the memos,
// which hold analyses of default-dialect texts.
func (a *Analyzer) parseIn(sql string, d Dialect) *Info {
	if hasExecComment(sql) {
		return analyzeExec(sql, !d.NoBackslashEscapes, func(view string) *Info {
			return a.parseView(view, d)
		})
	}
	return a.parseView(sql, d)
}

// parseView is parseIn for a text without executable comments.
func (a *Analyzer) parseView(sql string, d Dialect) *Info {
	if len(sql) > maxParseLen || tooDeep(sql, maxParseDepth) {
		return tooComplex(sql)
	}
	i := modeIndex(d)
	p, _ := modeParsers[i].Get().(*parser.Parser)
	if p == nil {
		p = newModeParser(i)
	}
	var info *Info
	func() {
		defer func() {
			if recover() != nil {
				info = nil
				p = newModeParser(i)
			}
		}()
		stmts, _, err := p.Parse(sql, "", "")
		if err == nil {
			info = analyzeStmts(stmts, sql)
		}
	}()
	modeParsers[i].Put(p)
	if info == nil {
		info = refusedVariant(sql, d.lexOptions(), func(s string) *Info { return a.parseView(s, d) })
	}
	if info == nil {
		return unreadable(sql, "parse-error")
	}
	info.Digest, _ = normalize(sql)
	if info.NoCacheHint || hasNoCacheHint(sql) {
		info.NoCacheHint = true
	}
	return info
}
