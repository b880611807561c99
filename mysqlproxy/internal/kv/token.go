package kv

import (
	"errors"
	"fmt"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// token is a token of the statement lexer kv shares with the analysis.
type token = sqlinfo.Token

// plainDoubleQuoted reports whether t is a "..." literal with nothing
// before it: the only literal the kv SELECT form accepts.
func plainDoubleQuoted(t token) bool {
	return t.Kind == sqlinfo.TokString && t.Quote == '"' && t.Intro == ""
}

// describe names t for a syntax error message.
func describe(t token) string {
	if t.Kind == sqlinfo.TokEOF {
		return "end of statement"
	}
	return fmt.Sprintf("%q at offset %d", clip(t.Text), t.Pos)
}

// lexer reads a statement's tokens on demand, so that ordinary SQL is
// rejected after its first few tokens without scanning the rest.
type lexer struct{ lx sqlinfo.Lexer }

func newLexer(sql string, noBackslash bool) lexer {
	return lexer{lx: sqlinfo.NewLexer(sql, sqlinfo.LexOptions{NoBackslashEscapes: noBackslash})}
}

// next consumes and returns the next token. A text the server would not
// lex is a syntax error.
func (l *lexer) next() (token, error) {
	t, err := l.lx.Next()
	if err != nil {
		return t, syntaxError(err)
	}
	return t, nil
}

// peek returns the next token without consuming it.
func (l *lexer) peek() (token, error) {
	t, err := l.lx.Peek()
	if err != nil {
		return t, syntaxError(err)
	}
	return t, nil
}

func syntaxError(err error) error {
	if le, ok := errors.AsType[*sqlinfo.LexError](err); ok {
		return fmt.Errorf("%w: %s", ErrSyntax, le.Msg)
	}
	return err
}
