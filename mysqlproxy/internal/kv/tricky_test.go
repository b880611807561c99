package kv

import (
	"fmt"
	"strings"
	"testing"
)

// trickyCases pin what Parse and ParseNoBackslashEscapes make of inputs at
// the edges of the lexer: comments of every kind, quoting and escapes,
// introducers, numbers, statement separators, whitespace, UTF-8 and
// invalid bytes, and long texts. want is Parse's result and nbe that of
// ParseNoBackslashEscapes, as rendered by renderParse. The entries marked
// "changed deliberately" differ from what kv's own lexer made of them
// before kv shared the analysis's: only in the text of a syntax error,
// where the shared lexer reads the text as the server does.
var trickyCases = []struct {
	sql, want, nbe string
}{
	{sql: "# c\nINSERT 'k' = 'v'", want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: "INSERT 'k' = 'v' #c", want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: "INSERT 'k' = 'v' -- c", want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: "INSERT 'k' = 'v' --c", want: "error: mycached: kv syntax error: unexpected \"-\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"-\" at offset 17 after the value"},
	{sql: "INSERT 'k' = 'v' --", want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: "INSERT 'k' = 'v' --\tc", want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: "INSERT 'k' = 'v' --\x01c", want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: "INSERT 'k' = -- c\n'v'", want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: "INSERT 'k' = --1", want: "error: mycached: kv syntax error: expected a quoted value, found \"-\" at offset 14", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"-\" at offset 14"},
	{sql: "SELECT 'k' -- c", want: "sql", nbe: "sql"},
	{sql: `SELECT "k" /* c */`, want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: `SELECT /* c */ "k"`, want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: `SELECT "k" /**/`, want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: `SELECT "k" /*/ x */`, want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: `SELECT "k" /*/`, want: "sql", nbe: "sql"},
	{sql: `SELECT "k" /* a /* b */ */`, want: "sql", nbe: "sql"},
	{sql: `/*! SELECT "k" */`, want: "sql", nbe: "sql"},
	{sql: `SELECT /*!50000 "k" */`, want: "sql", nbe: "sql"},
	{sql: `SELECT /*M! "k" */`, want: "sql", nbe: "sql"},
	{sql: `SELECT /*M!100500 "k" */`, want: "sql", nbe: "sql"},
	{sql: `SELECT /*T! "k" */`, want: "sql", nbe: "sql"},
	// Changed deliberately: the opener of an executable comment is named whole, version included.
	{sql: `INSERT "k" = "v" /*M! TTL 5 */`, want: "error: mycached: kv syntax error: unexpected \"/*M!\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"/*M!\" at offset 17 after the value"},
	// Changed deliberately: the opener of an executable comment is named whole, version included.
	{sql: `INSERT "k" = "v" /*!50000 TTL 5 */`, want: "error: mycached: kv syntax error: unexpected \"/*!50000\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"/*!50000\" at offset 17 after the value"},
	// Changed deliberately: a hint is one token, named whole.
	{sql: `INSERT "k" = "v" /*+ x */`, want: "error: mycached: kv syntax error: unexpected \"/*+ x */\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"/*+ x */\" at offset 17 after the value"},
	{sql: `INSERT /*+ x */ "k" = "v"`, want: "sql", nbe: "sql"},
	{sql: `DELETE "k" /*+ x`, want: "sql", nbe: "sql"},
	// Changed deliberately: an unterminated hint is an unterminated comment, as to the server.
	{sql: `DELETE 'k' /*+ x`, want: "error: mycached: kv syntax error: unterminated comment at offset 11", nbe: "error: mycached: kv syntax error: unterminated comment at offset 11"},
	{sql: `DROP /*! */`, want: "sql", nbe: "sql"},
	{sql: `DROP /* c */ ;`, want: "DROP", nbe: "DROP"},
	{sql: `DROP -- c`, want: "DROP", nbe: "DROP"},
	{sql: "DROP #\n;", want: "DROP", nbe: "DROP"},
	{sql: `SELECT * /* c */ ;`, want: "SELECT *", nbe: "SELECT *"},
	{sql: `SELECT */`, want: "sql", nbe: "sql"},
	{sql: `INSERT "k" = "v" */`, want: "error: mycached: kv syntax error: unexpected \"*\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"*\" at offset 17 after the value"},
	{sql: `INSERT "k" = "v" /* unterminated`, want: "error: mycached: kv syntax error: unterminated comment at offset 17", nbe: "error: mycached: kv syntax error: unterminated comment at offset 17"},
	{sql: `DELETE "k" /*`, want: "sql", nbe: "sql"},
	{sql: "SELECT \"k\" -- \n, \"j\"", want: "SELECT \"k\" \"j\"", nbe: "SELECT \"k\" \"j\""},
	{sql: "#\n#\nSELECT 'x'", want: "sql", nbe: "sql"},
	{sql: "-- \nDROP", want: "DROP", nbe: "DROP"},
	{sql: "--\nDROP", want: "DROP", nbe: "DROP"},
	{sql: "--DROP", want: "sql", nbe: "sql"},
	{sql: `SELECT "a""b"`, want: "SELECT \"a\\\"b\"", nbe: "SELECT \"a\\\"b\""},
	{sql: `SELECT "a"""`, want: "SELECT \"a\\\"\"", nbe: "SELECT \"a\\\"\""},
	{sql: `SELECT """"`, want: "SELECT \"\\\"\"", nbe: "SELECT \"\\\"\""},
	{sql: `SELECT ""`, want: "SELECT \"\"", nbe: "SELECT \"\""},
	{sql: `INSERT "" = ""`, want: "INSERT \"\" = \"\"", nbe: "INSERT \"\" = \"\""},
	{sql: `INSERT '' = ''`, want: "INSERT \"\" = \"\"", nbe: "INSERT \"\" = \"\""},
	{sql: `INSERT 'k' = 'a''b''c'`, want: "INSERT \"k\" = \"a'b'c\"", nbe: "INSERT \"k\" = \"a'b'c\""},
	{sql: `INSERT 'k' = 'a"b'`, want: "INSERT \"k\" = \"a\\\"b\"", nbe: "INSERT \"k\" = \"a\\\"b\""},
	{sql: `INSERT "k" = "a'b"`, want: "INSERT \"k\" = \"a'b\"", nbe: "INSERT \"k\" = \"a'b\""},
	// Changed deliberately: under NO_BACKSLASH_ESCAPES, b' opens a bit literal, as to the server.
	{sql: `INSERT "k" = 'a\'b'`, want: "INSERT \"k\" = \"a'b\"", nbe: "error: mycached: kv syntax error: unterminated bit literal starting at offset 17"},
	{sql: `INSERT "k" = 'a\\'`, want: "INSERT \"k\" = \"a\\\\\"", nbe: "INSERT \"k\" = \"a\\\\\\\\\""},
	{sql: `INSERT "k" = 'a\\\''`, want: "INSERT \"k\" = \"a\\\\'\"", nbe: "error: mycached: kv syntax error: unterminated string starting at offset 13"},
	{sql: `INSERT "k" = "\""`, want: "INSERT \"k\" = \"\\\"\"", nbe: "error: mycached: kv syntax error: unterminated string starting at offset 13"},
	{sql: `INSERT "k" = "\\"`, want: "INSERT \"k\" = \"\\\\\"", nbe: "INSERT \"k\" = \"\\\\\\\\\""},
	{sql: `INSERT "k" = "\"`, want: "error: mycached: kv syntax error: unterminated string starting at offset 13", nbe: "INSERT \"k\" = \"\\\\\""},
	{sql: `INSERT "k" = 'C:\path\new'`, want: "INSERT \"k\" = \"C:path\\new\"", nbe: "INSERT \"k\" = \"C:\\\\path\\\\new\""},
	{sql: `INSERT "k" = '\x\y\z'`, want: "INSERT \"k\" = \"xyz\"", nbe: "INSERT \"k\" = \"\\\\x\\\\y\\\\z\""},
	{sql: `INSERT "k" = '\%\_'`, want: "INSERT \"k\" = \"\\\\%\\\\_\"", nbe: "INSERT \"k\" = \"\\\\%\\\\_\""},
	{sql: `INSERT "k" = 'a\`, want: "error: mycached: kv syntax error: unterminated string starting at offset 13", nbe: "error: mycached: kv syntax error: unterminated string starting at offset 13"},
	{sql: `SELECT "a\""`, want: "SELECT \"a\\\"\"", nbe: "sql"},
	{sql: `SELECT "a\\"`, want: "SELECT \"a\\\\\"", nbe: "SELECT \"a\\\\\\\\\""},
	{sql: `SELECT "x" "y"`, want: "sql", nbe: "sql"},
	{sql: `SELECT "x"'y'`, want: "sql", nbe: "sql"},
	{sql: `SELECT "x""y"`, want: "SELECT \"x\\\"y\"", nbe: "SELECT \"x\\\"y\""},
	{sql: `INSERT "k" = "v""`, want: "error: mycached: kv syntax error: unterminated string starting at offset 13", nbe: "error: mycached: kv syntax error: unterminated string starting at offset 13"},
	{sql: `INSERT 'k' = 'v' TTL '6''0'`, want: "error: mycached: kv syntax error: TTL must be a whole number of seconds, not \"6'0\"", nbe: "error: mycached: kv syntax error: TTL must be a whole number of seconds, not \"6'0\""},
	{sql: "INSERT `k` = 'v'", want: "sql", nbe: "sql"},
	{sql: "INSERT 'k' = `v`", want: "error: mycached: kv syntax error: expected a quoted value, found \"`v`\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"`v`\" at offset 13"},
	{sql: "SELECT `k``x`", want: "sql", nbe: "sql"},
	{sql: "INSERT 'k' = `unterminated", want: "error: mycached: kv syntax error: unterminated identifier starting at offset 13", nbe: "error: mycached: kv syntax error: unterminated identifier starting at offset 13"},
	{sql: "SELECT `", want: "sql", nbe: "sql"},
	{sql: `DELETE "k"""`, want: "DELETE \"k\\\"\"", nbe: "DELETE \"k\\\"\""},
	{sql: `INSERT 'k' = 'a\'`, want: "error: mycached: kv syntax error: unterminated string starting at offset 13", nbe: "INSERT \"k\" = \"a\\\\\""},
	{sql: `INSERT 'k' = 'a\'' '`, want: "error: mycached: kv syntax error: unterminated string starting at offset 19", nbe: "INSERT \"k\" = \"a\\\\' \""},
	{sql: `SELECT "a\", "b\"`, want: "sql", nbe: "SELECT \"a\\\\\" \"b\\\\\""},
	{sql: `INSERT 'k' = 'a\nb'`, want: "INSERT \"k\" = \"a\\nb\"", nbe: "INSERT \"k\" = \"a\\\\nb\""},
	{sql: `INSERT "k" = _utf8'x'`, want: "INSERT \"k\" = \"x\"", nbe: "INSERT \"k\" = \"x\""},
	{sql: `INSERT "k" = _utf8"x"`, want: "INSERT \"k\" = \"x\"", nbe: "INSERT \"k\" = \"x\""},
	{sql: `INSERT "k" = _utf8 'x'`, want: "INSERT \"k\" = \"x\"", nbe: "INSERT \"k\" = \"x\""},
	{sql: "INSERT \"k\" = _utf8\t\n'x'", want: "INSERT \"k\" = \"x\"", nbe: "INSERT \"k\" = \"x\""},
	{sql: "INSERT \"k\" = _utf8\f'x'", want: "error: mycached: kv syntax error: expected a quoted value, found \"_utf8\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"_utf8\" at offset 13"},
	{sql: `INSERT "k" = _utf8mb4 X'41'`, want: "INSERT \"k\" = \"A\"", nbe: "INSERT \"k\" = \"A\""},
	{sql: `INSERT "k" = _binary x'41'`, want: "INSERT \"k\" = \"A\"", nbe: "INSERT \"k\" = \"A\""},
	{sql: `INSERT "k" = _binary 0x41`, want: "error: mycached: kv syntax error: expected a quoted value, found \"_binary\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"_binary\" at offset 13"},
	{sql: `INSERT _ 'k' = 'v'`, want: "sql", nbe: "sql"},
	{sql: `INSERT "k" = N'x'`, want: "INSERT \"k\" = \"x\"", nbe: "INSERT \"k\" = \"x\""},
	{sql: `INSERT "k" = n'x'`, want: "INSERT \"k\" = \"x\"", nbe: "INSERT \"k\" = \"x\""},
	{sql: `INSERT "k" = N"x"`, want: "error: mycached: kv syntax error: expected a quoted value, found \"N\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"N\" at offset 13"},
	{sql: `INSERT "k" = N 'x'`, want: "error: mycached: kv syntax error: expected a quoted value, found \"N\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"N\" at offset 13"},
	{sql: `INSERT "k" = X'41'`, want: "INSERT \"k\" = \"A\"", nbe: "INSERT \"k\" = \"A\""},
	{sql: `INSERT "k" = X"41"`, want: "error: mycached: kv syntax error: expected a quoted value, found \"X\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"X\" at offset 13"},
	{sql: `INSERT "k" = X '41'`, want: "error: mycached: kv syntax error: expected a quoted value, found \"X\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"X\" at offset 13"},
	{sql: `INSERT "k" = x'4'`, want: "error: mycached: kv syntax error: hex literal at offset 13 has an odd number of digits", nbe: "error: mycached: kv syntax error: hex literal at offset 13 has an odd number of digits"},
	{sql: `INSERT "k" = x'4g'`, want: "error: mycached: kv syntax error: hex literal at offset 13 has a non-hex digit", nbe: "error: mycached: kv syntax error: hex literal at offset 13 has a non-hex digit"},
	{sql: `INSERT "k" = X'41`, want: "error: mycached: kv syntax error: unterminated hex literal starting at offset 13", nbe: "error: mycached: kv syntax error: unterminated hex literal starting at offset 13"},
	// Changed deliberately: b'01' is a bit literal, as to the server.
	{sql: `INSERT "k" = b'01'`, want: "error: mycached: kv syntax error: expected a quoted value, found \"b'01'\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"b'01'\" at offset 13"},
	// Changed deliberately: B'0101' is a bit literal, as to the server.
	{sql: `INSERT "k" = B'0101'`, want: "error: mycached: kv syntax error: expected a quoted value, found \"B'0101'\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"B'0101'\" at offset 13"},
	{sql: `INSERT "k" = 0b01`, want: "error: mycached: kv syntax error: expected a quoted value, found \"0b01\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"0b01\" at offset 13"},
	{sql: `INSERT "k" = 0x`, want: "error: mycached: kv syntax error: expected a quoted value, found \"0x\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"0x\" at offset 13"},
	{sql: `INSERT "k" = 0X41`, want: "error: mycached: kv syntax error: expected a quoted value, found \"0X41\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"0X41\" at offset 13"},
	{sql: `INSERT "k" = 0x4`, want: "INSERT \"k\" = \"\\x04\"", nbe: "INSERT \"k\" = \"\\x04\""},
	{sql: `INSERT "k" = 0xg`, want: "error: mycached: kv syntax error: expected a quoted value, found \"0xg\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"0xg\" at offset 13"},
	{sql: `SELECT _utf8'x'`, want: "sql", nbe: "sql"},
	{sql: `SELECT N'x', "y"`, want: "sql", nbe: "sql"},
	{sql: `DELETE X'6b'`, want: "DELETE \"k\"", nbe: "DELETE \"k\""},
	{sql: `DELETE _binary'k'`, want: "DELETE \"k\"", nbe: "DELETE \"k\""},
	{sql: `DELETE N"k"`, want: "sql", nbe: "sql"},
	{sql: `INSERT _latin1'k' = _latin1'v'`, want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: `INSERT 'k' = 1.`, want: "INSERT \"k\" = \"1.\"", nbe: "INSERT \"k\" = \"1.\""},
	{sql: `INSERT 'k' = 1.e5`, want: "INSERT \"k\" = \"1.e5\"", nbe: "INSERT \"k\" = \"1.e5\""},
	{sql: `INSERT 'k' = 1e`, want: "error: mycached: kv syntax error: expected a quoted value, found \"1e\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"1e\" at offset 13"},
	{sql: `INSERT 'k' = 1e+`, want: "error: mycached: kv syntax error: expected a quoted value, found \"1e\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"1e\" at offset 13"},
	{sql: `INSERT 'k' = 1e-5`, want: "INSERT \"k\" = \"1e-5\"", nbe: "INSERT \"k\" = \"1e-5\""},
	{sql: `INSERT 'k' = 1E5`, want: "INSERT \"k\" = \"1E5\"", nbe: "INSERT \"k\" = \"1E5\""},
	{sql: `INSERT 'k' = 00042`, want: "INSERT \"k\" = \"00042\"", nbe: "INSERT \"k\" = \"00042\""},
	{sql: `INSERT 'k' = - 42`, want: "INSERT \"k\" = \"-42\"", nbe: "INSERT \"k\" = \"-42\""},
	{sql: `INSERT 'k' = --42`, want: "error: mycached: kv syntax error: expected a quoted value, found \"-\" at offset 14", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"-\" at offset 14"},
	{sql: `INSERT 'k' = -'v'`, want: "error: mycached: kv syntax error: expected a quoted value, found \"'v'\" at offset 14", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"'v'\" at offset 14"},
	{sql: `INSERT 'k' = +42`, want: "error: mycached: kv syntax error: expected a quoted value, found \"+\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"+\" at offset 13"},
	{sql: `INSERT -1 = 'v'`, want: "INSERT \"-1\" = \"v\"", nbe: "INSERT \"-1\" = \"v\""},
	{sql: `DELETE -1`, want: "DELETE \"-1\"", nbe: "DELETE \"-1\""},
	{sql: `DELETE - 1`, want: "DELETE \"-1\"", nbe: "DELETE \"-1\""},
	{sql: `INSERT 'k' = 1.5.5`, want: "error: mycached: kv syntax error: unexpected \".5\" at offset 16 after the value", nbe: "error: mycached: kv syntax error: unexpected \".5\" at offset 16 after the value"},
	{sql: `INSERT 'k' = 'v' TTL 0`, want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: `INSERT 'k' = 'v' TTL 007`, want: "INSERT \"k\" = \"v\" ttl 7s", nbe: "INSERT \"k\" = \"v\" ttl 7s"},
	{sql: `INSERT 'k' = 'v' TTL +5`, want: "error: mycached: kv syntax error: TTL needs a number of seconds, found \"+\" at offset 21", nbe: "error: mycached: kv syntax error: TTL needs a number of seconds, found \"+\" at offset 21"},
	{sql: `INSERT 'k' = 'v' TTL 1e3`, want: "error: mycached: kv syntax error: TTL must be a whole number of seconds, not \"1e3\"", nbe: "error: mycached: kv syntax error: TTL must be a whole number of seconds, not \"1e3\""},
	{sql: `INSERT 'k' = 'v' TTL ''`, want: "error: mycached: kv syntax error: TTL must be a whole number of seconds, not \"\"", nbe: "error: mycached: kv syntax error: TTL must be a whole number of seconds, not \"\""},
	{sql: `INSERT 'k' = 'v' TTL "60"`, want: "INSERT \"k\" = \"v\" ttl 1m0s", nbe: "INSERT \"k\" = \"v\" ttl 1m0s"},
	{sql: `INSERT 'k' = 'v' TTL 0x10`, want: "error: mycached: kv syntax error: TTL needs a number of seconds, found \"0x10\" at offset 21", nbe: "error: mycached: kv syntax error: TTL needs a number of seconds, found \"0x10\" at offset 21"},
	{sql: `INSERT 'k' = 'v' ttl ?`, want: "INSERT \"k\" = \"v\" params 1", nbe: "INSERT \"k\" = \"v\" params 1"},
	// Changed deliberately: after "word." the server reads an identifier, not .5.
	{sql: `INSERT 'k' = 'v' TTL.5`, want: "error: mycached: kv syntax error: TTL needs a number of seconds, found \".\" at offset 20", nbe: "error: mycached: kv syntax error: TTL needs a number of seconds, found \".\" at offset 20"},
	{sql: `INSERT 'k' = 'v' TTL5`, want: "error: mycached: kv syntax error: unexpected \"TTL5\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"TTL5\" at offset 17 after the value"},
	{sql: `INSERT 'k' = v.5`, want: "error: mycached: kv syntax error: expected a quoted value, found \"v\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"v\" at offset 13"},
	{sql: `SELECT "k";`, want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: `SELECT "k" ;`, want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: `SELECT "k";;`, want: "sql", nbe: "sql"},
	{sql: `SELECT "k"; SELECT "j"`, want: "sql", nbe: "sql"},
	{sql: `INSERT 'k' = 'v';SELECT 1`, want: "error: mycached: kv syntax error: unexpected \"SELECT\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"SELECT\" at offset 17 after the value"},
	{sql: `DELETE 'k'; DROP`, want: "error: mycached: kv syntax error: unexpected \"DROP\" at offset 12 after the key", nbe: "error: mycached: kv syntax error: unexpected \"DROP\" at offset 12 after the key"},
	{sql: `DROP;;`, want: "sql", nbe: "sql"},
	{sql: `DROP ;-- c`, want: "DROP", nbe: "DROP"},
	{sql: `SELECT *;SELECT *`, want: "sql", nbe: "sql"},
	{sql: `;SELECT "k"`, want: "sql", nbe: "sql"},
	{sql: `SELECT "k",;`, want: "sql", nbe: "sql"},
	{sql: `SELECT ,"k"`, want: "sql", nbe: "sql"},
	{sql: "\r\nSELECT\r\n\"k\"\r\n", want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: "\tSELECT\t\"k\"\t;\t", want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: "\fSELECT\f\"k\"\f", want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: "\vSELECT\v\"k\"\v", want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: "SELECT\u00a0\"k\"", want: "sql", nbe: "sql"},
	{sql: "\u00a0SELECT \"k\"", want: "sql", nbe: "sql"},
	{sql: "INSERT 'k' =\u00a0'v'", want: "error: mycached: kv syntax error: expected a quoted value, found \"\\u00a0\" at offset 12", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"\\u00a0\" at offset 12"},
	{sql: "INSERT 'k' = 'v'\u00a0", want: "error: mycached: kv syntax error: unexpected \"\\u00a0\" at offset 16 after the value", nbe: "error: mycached: kv syntax error: unexpected \"\\u00a0\" at offset 16 after the value"},
	{sql: "SELECT\x00\"k\"", want: "sql", nbe: "sql"},
	{sql: "INSERT 'k' = 'v'\x00", want: "error: mycached: kv syntax error: unexpected \"\\x00\" at offset 16 after the value", nbe: "error: mycached: kv syntax error: unexpected \"\\x00\" at offset 16 after the value"},
	{sql: "INSERT 'k\x00' = 'v\x00'", want: "INSERT \"k\\x00\" = \"v\\x00\"", nbe: "INSERT \"k\\x00\" = \"v\\x00\""},
	{sql: "\x00SELECT \"k\"", want: "sql", nbe: "sql"},
	{sql: "SELECT \"k\"\x1a", want: "sql", nbe: "sql"},
	{sql: "SELECT\x85\"k\"", want: "sql", nbe: "sql"},
	{sql: `INSERT "ключ" = "значение"`, want: "INSERT \"ключ\" = \"значение\"", nbe: "INSERT \"ключ\" = \"значение\""},
	{sql: `SELECT "日本", "語"`, want: "SELECT \"日本\" \"語\"", nbe: "SELECT \"日本\" \"語\""},
	{sql: `INSERT 'k' = '😀'`, want: "INSERT \"k\" = \"😀\"", nbe: "INSERT \"k\" = \"😀\""},
	{sql: "INSERT 'k' = '\xff\xfe'", want: "INSERT \"k\" = \"\\xff\\xfe\"", nbe: "INSERT \"k\" = \"\\xff\\xfe\""},
	{sql: "INSERT '\xc3' = 'v'", want: "INSERT \"\\xc3\" = \"v\"", nbe: "INSERT \"\\xc3\" = \"v\""},
	{sql: "SELECT \"\xc3\"", want: "SELECT \"\\xc3\"", nbe: "SELECT \"\\xc3\""},
	{sql: "INSERT 'k' = '\xe2\x80'", want: "INSERT \"k\" = \"\\xe2\\x80\"", nbe: "INSERT \"k\" = \"\\xe2\\x80\""},
	{sql: `INSERT 'k' = é`, want: "error: mycached: kv syntax error: expected a quoted value, found \"é\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"é\" at offset 13"},
	{sql: "SELECT \"k\" \xff", want: "sql", nbe: "sql"},
	{sql: `INSERT ключ = 'v'`, want: "sql", nbe: "sql"},
	{sql: `SELECT ?,?`, want: "SELECT ? ? params 2", nbe: "SELECT ? ? params 2"},
	{sql: `SELECT ??`, want: "sql", nbe: "sql"},
	{sql: `INSERT ?=?TTL?`, want: "INSERT ? = ? params 3", nbe: "INSERT ? = ? params 3"},
	{sql: `INSERT '?' = ?`, want: "INSERT \"?\" = ? params 1", nbe: "INSERT \"?\" = ? params 1"},
	{sql: `SELECT "?"`, want: "SELECT \"?\"", nbe: "SELECT \"?\""},
	{sql: `INSERT ? = ? TTL ? ?`, want: "error: mycached: kv syntax error: unexpected \"?\" at offset 19 after the TTL", nbe: "error: mycached: kv syntax error: unexpected \"?\" at offset 19 after the TTL"},
	{sql: `SELECT ?;`, want: "SELECT ? params 1", nbe: "SELECT ? params 1"},
	{sql: `SELECT :a`, want: "sql", nbe: "sql"},
	{sql: `INSERT 'k' = :v`, want: "error: mycached: kv syntax error: expected a quoted value, found \":\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \":\" at offset 13"},
	{sql: `sElEcT "k"`, want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: `SELECT "k" ttl 5`, want: "sql", nbe: "sql"},
	{sql: `INSERT 'k' = 'v' ttl 5 ;`, want: "INSERT \"k\" = \"v\" ttl 5s", nbe: "INSERT \"k\" = \"v\" ttl 5s"},
	{sql: `INSERTX 'k' = 'v'`, want: "sql", nbe: "sql"},
	{sql: `SELECT"k"`, want: "SELECT \"k\"", nbe: "SELECT \"k\""},
	{sql: `INSERT'k'='v'`, want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: `DELETE'k'`, want: "DELETE \"k\"", nbe: "DELETE \"k\""},
	{sql: `DROP;DROP`, want: "sql", nbe: "sql"},
	{sql: `drop table`, want: "sql", nbe: "sql"},
	{sql: `SELECT * FROM`, want: "sql", nbe: "sql"},
	{sql: `SELECT **`, want: "sql", nbe: "sql"},
	{sql: `SELECT *"k"`, want: "sql", nbe: "sql"},
	{sql: `INSERT "t".x = 1`, want: "sql", nbe: "sql"},
	{sql: `INSERT "t"(a) VALUES (1)`, want: "sql", nbe: "sql"},
	{sql: `INSERT "k" = "v" , `, want: "error: mycached: kv syntax error: unexpected \",\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \",\" at offset 17 after the value"},
	{sql: `DELETE "t1" USING t1`, want: "sql", nbe: "sql"},
	{sql: `DELETE "k" ;`, want: "DELETE \"k\"", nbe: "DELETE \"k\""},
	{sql: `DELETE "k" -- c`, want: "DELETE \"k\"", nbe: "DELETE \"k\""},
	{sql: `DELETE "k" /*! x */`, want: "sql", nbe: "sql"},
	{sql: `DELETE 'k' /*! x */`, want: "error: mycached: kv syntax error: unexpected \"/*!\" at offset 11 after the key", nbe: "error: mycached: kv syntax error: unexpected \"/*!\" at offset 11 after the key"},
	{sql: `INSERT "k" "v"`, want: "error: mycached: kv syntax error: expected = after the key, found \"\\\"v\\\"\" at offset 11", nbe: "error: mycached: kv syntax error: expected = after the key, found \"\\\"v\\\"\" at offset 11"},
	{sql: `INSERT "t" . "x"`, want: "sql", nbe: "sql"},
	{sql: `INSERT "k" = "v" TTL 5;`, want: "INSERT \"k\" = \"v\" ttl 5s", nbe: "INSERT \"k\" = \"v\" ttl 5s"},
	{sql: `INSERT "k" = t.5`, want: "error: mycached: kv syntax error: expected a quoted value, found \"t\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"t\" at offset 13"},
	// Changed deliberately: a hint is one token, named whole.
	{sql: `INSERT "k" = "v" TTL 5 /*+ x */`, want: "error: mycached: kv syntax error: unexpected \"/*+ x */\" at offset 23 after the TTL", nbe: "error: mycached: kv syntax error: unexpected \"/*+ x */\" at offset 23 after the TTL"},
	{sql: `SELECT "k" /*+ x */`, want: "sql", nbe: "sql"},
	// Changed deliberately: the opener of an executable comment is named whole, version included.
	{sql: `INSERT "k" = "v" /*M!100500 x */`, want: "error: mycached: kv syntax error: unexpected \"/*M!100500\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"/*M!100500\" at offset 17 after the value"},
	{sql: `INSERT "k" = "v" /*!`, want: "error: mycached: kv syntax error: unexpected \"/*!\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"/*!\" at offset 17 after the value"},
	{sql: `INSERT "k" = "v" /*M`, want: "error: mycached: kv syntax error: unterminated comment at offset 17", nbe: "error: mycached: kv syntax error: unterminated comment at offset 17"},
	{sql: `INSERT 'k' = 'v' /*T! TTL 5 */`, want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: `INSERT "k" = 'v' /*!*/`, want: "error: mycached: kv syntax error: unexpected \"/*!\" at offset 17 after the value", nbe: "error: mycached: kv syntax error: unexpected \"/*!\" at offset 17 after the value"},
	{sql: `INSERT 'k' = 'v' #`, want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: "INSERT 'k' = 'v' -- \r\n;", want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: "INSERT 'k' = 'v' -- c\r\nTTL 5", want: "INSERT \"k\" = \"v\" ttl 5s", nbe: "INSERT \"k\" = \"v\" ttl 5s"},
	{sql: `INSERT 0x6b = 0x76`, want: "INSERT \"k\" = \"v\"", nbe: "INSERT \"k\" = \"v\""},
	{sql: `INSERT .5 = .5e1`, want: "INSERT \".5\" = \".5e1\"", nbe: "INSERT \".5\" = \".5e1\""},
	{sql: `INSERT 'k' = 1.5e+06x`, want: "error: mycached: kv syntax error: expected a quoted value, found \"1.5e+06x\" at offset 13", nbe: "error: mycached: kv syntax error: expected a quoted value, found \"1.5e+06x\" at offset 13"},
	{sql: `INSERT 'k' = 99999999999999999999999999`, want: "INSERT \"k\" = \"99999999999999999999999999\"", nbe: "INSERT \"k\" = \"99999999999999999999999999\""},
	{sql: `SELECT "\0"`, want: "SELECT \"\\x00\"", nbe: "SELECT \"\\\\0\""},
	{sql: `SELECT "\Z"`, want: "SELECT \"\\x1a\"", nbe: "SELECT \"\\\\Z\""},
	{sql: "long:value", want: "sql", nbe: "sql"},
	{sql: `INSERT "k" = "` + strings.Repeat("x", 1<<20), want: "error: mycached: kv syntax error: unterminated string starting at offset 13", nbe: "error: mycached: kv syntax error: unterminated string starting at offset 13"},
	{sql: `SELECT ` + strings.Repeat(`"k", `, MaxSelectKeys-1) + `"z"`, want: "SELECT" + strings.Repeat(` "k"`, MaxSelectKeys-1) + ` "z"`, nbe: "SELECT" + strings.Repeat(` "k"`, MaxSelectKeys-1) + ` "z"`},
	{sql: strings.Repeat("/* c */ -- c\n# c\n", 10000) + `DROP`, want: "DROP", nbe: "DROP"},
	{sql: `INSERT "k" = "` + strings.Repeat(`\"\\\n`, 50000) + `"`, want: "INSERT \"k\" = \"\\\"\\\\\\n\\\"\\\\\\n\\\"\\\\\\n\\\"\\\\\\n\\\"\\\\\\n\\\"\\\\\\n\\\"\\\\\\n\\\"\\\\\\n\\\"\\\\\\n\\\"\\\\\\n\\\"\\\\\"...(150000 bytes)", nbe: "error: mycached: kv syntax error: unexpected \"\\\\\" at offset 16 after the value"},
}

// renderParse writes the outcome of a Parse call as one line: "sql" for
// ok=false, "error: ..." for a syntax error, or the statement.
func renderParse(st *Stmt, ok bool, err error) string {
	switch {
	case !ok:
		return "sql"
	case err != nil:
		return "error: " + err.Error()
	}
	lit := func(b []byte) string {
		if b == nil {
			return "?"
		}
		if len(b) > 40 {
			return fmt.Sprintf("%q...(%d bytes)", b[:32], len(b))
		}
		return fmt.Sprintf("%q", b)
	}
	var s strings.Builder
	s.WriteString(st.Op.String())
	for _, k := range st.Keys {
		s.WriteString(" " + lit(k))
	}
	if st.Op == OpInsert {
		s.WriteString(" = " + lit(st.Value))
	}
	if st.TTL != 0 {
		fmt.Fprintf(&s, " ttl %v", st.TTL)
	}
	if st.Params != 0 {
		fmt.Fprintf(&s, " params %d", st.Params)
	}
	return s.String()
}

func TestTricky(t *testing.T) {
	for _, tt := range trickyCases {
		if got := renderParse(Parse(tt.sql)); got != tt.want {
			t.Errorf("Parse(%q) = %s, want %s", clip(tt.sql), got, tt.want)
		}
		if got := renderParse(ParseNoBackslashEscapes(tt.sql)); got != tt.nbe {
			t.Errorf("ParseNoBackslashEscapes(%q) = %s, want %s", clip(tt.sql), got, tt.nbe)
		}
	}
}
