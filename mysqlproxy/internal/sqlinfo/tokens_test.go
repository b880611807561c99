package sqlinfo

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// lexAll renders the tokens of sql as "kind:text" (with "=value" for
// literals), and an error as "!message".
func lexAll(sql string, opts LexOptions) string {
	lx := NewLexer(sql, opts)
	var out []string
	for {
		t, err := lx.Next()
		if err != nil {
			out = append(out, "!"+err.(*LexError).Msg)
			continue
		}
		if t.Kind == TokEOF {
			return strings.Join(out, " ")
		}
		s := fmt.Sprintf("%s:%s", kindName[t.Kind], t.Text)
		if v := t.Value(); v != nil {
			s += fmt.Sprintf("=%q", v)
		}
		out = append(out, s)
	}
}

var kindName = map[TokenKind]string{
	TokWord: "w", TokQuotedIdent: "id", TokString: "s", TokHex: "x", TokBit: "b", TokNumber: "n",
	TokParam: "p", TokHint: "hint", TokExecOpen: "open", TokExecClose: "close", TokPunct: "c",
}

func TestLexer(t *testing.T) {
	ansi := LexOptions{ANSIQuotes: true}
	nbe := LexOptions{NoBackslashEscapes: true}
	tests := []struct {
		sql  string
		opts LexOptions
		want string
	}{
		{"SELECT a, `b``c` FROM t1", LexOptions{}, "w:SELECT w:a c:, id:`b``c` w:FROM w:t1"},
		{"a # c\nb -- c\nc --d /* e */ f", LexOptions{}, `w:a w:b w:c c:- c:- w:d w:f`},
		{"a --\x01b\n c", LexOptions{}, "w:a w:c"},
		{`'it''s' "a\"b" 'x\%\n'`, LexOptions{}, `s:'it''s'="it's" s:"a\"b"="a\"b" s:'x\%\n'="x\\%\n"`},
		{`'a\' 'b'`, nbe, `s:'a\'="a\\" s:'b'="b"`},
		{`"a\" b"`, ansi, `id:"a\" w:b !unterminated identifier starting at offset 6`},
		{`"a""b" _utf8"x" _utf8'x'`, ansi, `id:"a""b" w:_utf8 id:"x" s:_utf8'x'="x"`},
		{`_binary 'a' N'b' n'c' X'4142' x'' 0x414 b'1000001' 0b1 B''`, LexOptions{},
			`s:_binary 'a'="a" s:N'b'="b" s:n'c'="c" x:X'4142'="AB" x:x''="" x:0x414="\x04\x14" b:b'1000001'="A" b:0b1="\x01" b:B''=""`},
		{`1 1.5 .5 1e6 1.5E-3 1. 1abc 0x1g 0b12 1.5e3x`, LexOptions{}, `n:1 n:1.5 n:.5 n:1e6 n:1.5E-3 n:1. w:1abc w:0x1g w:0b12 w:1.5e3x`},
		{"t.1e5 t .5 `t`.5 t.`c`", LexOptions{}, "w:t c:. w:1e5 w:t n:.5 id:`t` c:. w:5 w:t c:. id:`c`"},
		{`? ?? '?'`, LexOptions{}, `p:? p:? p:? s:'?'="?"`},
		{"SELECT /*+ BKA(t) */ 1 /*!50100 a */ /*M! b */ c */", LexOptions{},
			`w:SELECT hint:/*+ BKA(t) */ n:1 open:/*!50100 w:a close:*/ open:/*M! w:b close:*/ w:c c:* c:/`},
		{"a /*T! b */ c /**/ d /*/ e */", LexOptions{}, "w:a w:c w:d"},
		{"a /*/", LexOptions{}, "w:a !unterminated comment at offset 2"},
		{"a /*+ b", LexOptions{}, "w:a !unterminated comment at offset 2"},
		{`a 'b`, LexOptions{}, "w:a !unterminated string starting at offset 2"},
		{`a 'b\'`, LexOptions{}, "w:a !unterminated string starting at offset 2"},
		{"a `b", LexOptions{}, "w:a !unterminated identifier starting at offset 2"},
		{`X'4' X'4g' X'41 c`, LexOptions{}, `!hex literal at offset 0 has an odd number of digits !hex literal at offset 5 has a non-hex digit !unterminated hex literal starting at offset 11`},
		{`b'2' c`, LexOptions{}, `!bit literal at offset 0 has a digit other than 0 and 1 w:c`},
		{"\xc2\xa0a é \x00\xff", LexOptions{}, "w:\xc2\xa0a w:é c:\x00 w:\xff"},
		{"a\f\vb\r\n\tc", LexOptions{}, "w:a w:b w:c"},
	}
	for _, tt := range tests {
		if got := lexAll(tt.sql, tt.opts); got != tt.want {
			t.Errorf("lex %q %+v:\ngot  %s\nwant %s", tt.sql, tt.opts, got, tt.want)
		}
	}
}

// FuzzLexer checks that the lexer never panics, that its tokens are the
// text's bytes in order, that Peek agrees with Next, and that a string's
// value is what the parser's own lexer reads.
func FuzzLexer(f *testing.F) {
	for _, s := range []string{"SELECT 'a''b', \"c\\\"d\" FROM `t` WHERE x = ? -- c", "/*!50100 a */ /*+ h */ #x\n1.5e3",
		"_binary'x' X'41' b'01' N'y' 0x41 0b1 t.1e5", "'unterminated", "/* open", "`x", "\xff\x00\xc2\xa0"} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, sql string, mode uint8) {
		opts := LexOptions{NoBackslashEscapes: mode&1 != 0, ANSIQuotes: mode&2 != 0}
		lx := NewLexer(sql, opts)
		prev := 0
		for n := 0; ; n++ {
			if n > len(sql)+1 {
				t.Fatalf("%q: no progress", sql)
			}
			p, perr := lx.Peek()
			tok, err := lx.Next()
			if p != tok || (perr == nil) != (err == nil) {
				t.Fatalf("%q: Peek %+v, %v; Next %+v, %v", sql, p, perr, tok, err)
			}
			if err != nil {
				var le *LexError
				if !errors.As(err, &le) || le.Pos < prev || le.Pos >= len(sql) {
					t.Fatalf("%q: error %v at offset %d", sql, err, prev)
				}
				prev = le.Pos + 1
				continue
			}
			if tok.Pos < prev || tok.Pos+len(tok.Text) > len(sql) || sql[tok.Pos:tok.Pos+len(tok.Text)] != tok.Text {
				t.Fatalf("%q: token %+v out of place (previous end %d)", sql, tok, prev)
			}
			if tok.Kind == TokEOF {
				if tok.Pos != len(sql) {
					t.Fatalf("%q: EOF at %d", sql, tok.Pos)
				}
				return
			}
			if len(tok.Text) == 0 {
				t.Fatalf("%q: empty token %+v", sql, tok)
			}
			prev = tok.Pos + len(tok.Text)
			v := tok.Value()
			switch tok.Kind {
			case TokString, TokHex, TokBit:
				if v == nil {
					t.Fatalf("%q: nil value of %+v", sql, tok)
				}
			}
			if tok.Kind == TokString && opts == (LexOptions{}) && tok.Intro == "" && !strings.Contains(tok.Text, `\%`) && !strings.Contains(tok.Text, `\_`) {
				if pv, ok := lexValue(tok.Text); ok && pv.Type == StringLit && pv.Lit != string(v) {
					t.Fatalf("%q: value %q, the parser reads %q", tok.Text, v, pv.Lit)
				}
			}
		}
	})
}
