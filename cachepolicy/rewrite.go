package cachepolicy

import (
	"errors"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// concatName is the local through which every .. of a script calls
// state.concat. It is not a valid Lua name, so no script can refer to it,
// shadow it or assign it.
const concatName = "(concat)"

// guardConcat rewrites a chunk so that every chain a .. b .. c becomes
// concat(a, b, c), where concat is a local bound, as the chunk's first
// statement, to the sandbox's concatName entry. The VM's OP_CONCAT builds
// its whole result in one instruction, out of reach of the deadline and of
// the memory budget; the call charges the budget first.
func guardConcat(chunk []ast.Stmt) []ast.Stmt {
	r := concatRewriter{}
	r.stmts(chunk)
	bind := &ast.LocalAssignStmt{Names: []string{concatName}, Exprs: []ast.Expr{&ast.IdentExpr{Value: concatName}}}
	return append([]ast.Stmt{bind}, chunk...)
}

// errRawConcat reports a compiled chunk that still holds an OP_CONCAT.
var errRawConcat = errors.New("cachepolicy: a concatenation escaped the memory budget")

// checkNoConcat makes sure that the rewrite reached every .. in p and its
// nested functions: an AST node it did not know would otherwise compile
// to an unbounded concatenation silently.
func checkNoConcat(p *lua.FunctionProto) error {
	for _, inst := range p.Code {
		if int(inst>>26) == lua.OP_CONCAT {
			return errRawConcat
		}
	}
	for _, child := range p.FunctionPrototypes {
		if err := checkNoConcat(child); err != nil {
			return err
		}
	}
	return nil
}

type concatRewriter struct{}

func (r concatRewriter) stmts(list []ast.Stmt) {
	for _, s := range list {
		r.stmt(s)
	}
}

func (r concatRewriter) exprs(list []ast.Expr) {
	for i, e := range list {
		list[i] = r.expr(e)
	}
}

func (r concatRewriter) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		r.exprs(s.Lhs)
		r.exprs(s.Rhs)
	case *ast.LocalAssignStmt:
		r.exprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = r.expr(s.Expr)
	case *ast.DoBlockStmt:
		r.stmts(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Stmts)
	case *ast.RepeatStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Stmts)
	case *ast.IfStmt:
		s.Condition = r.expr(s.Condition)
		r.stmts(s.Then)
		r.stmts(s.Else)
	case *ast.NumberForStmt:
		s.Init = r.expr(s.Init)
		s.Limit = r.expr(s.Limit)
		s.Step = r.expr(s.Step)
		r.stmts(s.Stmts)
	case *ast.GenericForStmt:
		r.exprs(s.Exprs)
		r.stmts(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			s.Name.Func = r.expr(s.Name.Func)
			s.Name.Receiver = r.expr(s.Name.Receiver)
		}
		r.expr(s.Func)
	case *ast.ReturnStmt:
		r.exprs(s.Exprs)
	}
}

func (r concatRewriter) expr(e ast.Expr) ast.Expr {
	switch e := e.(type) {
	case *ast.StringConcatOpExpr:
		// a .. b .. c parses as a .. (b .. c); the VM joins the whole
		// right spine in one instruction, and so does concat.
		var args []ast.Expr
		var cur ast.Expr = e
		for {
			c, ok := cur.(*ast.StringConcatOpExpr)
			if !ok {
				break
			}
			args = append(args, r.expr(c.Lhs))
			cur = c.Rhs
		}
		args = append(args, r.expr(cur))
		fn := &ast.IdentExpr{Value: concatName}
		fn.SetLine(e.Line())
		fn.SetLastLine(e.LastLine())
		call := &ast.FuncCallExpr{Func: fn, Args: args, AdjustRet: true}
		call.SetLine(e.Line())
		call.SetLastLine(e.LastLine())
		return call
	case *ast.AttrGetExpr:
		e.Object = r.expr(e.Object)
		e.Key = r.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			f.Key = r.expr(f.Key)
			f.Value = r.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		e.Func = r.expr(e.Func)
		e.Receiver = r.expr(e.Receiver)
		r.exprs(e.Args)
	case *ast.LogicalOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		e.Lhs = r.expr(e.Lhs)
		e.Rhs = r.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		e.Expr = r.expr(e.Expr)
	case *ast.FunctionExpr:
		r.stmts(e.Stmts)
	}
	return e
}
