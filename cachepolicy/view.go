package cachepolicy

import (
	"fmt"
	"strconv"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// fieldSet records which fields of q a call read.
type fieldSet uint16

const (
	fieldSQL fieldSet = 1 << iota
	fieldDigest
	fieldKind
	fieldTables
	fieldDB
	fieldUser
	fieldClientAddr
	fieldPrepared
	fieldParams
	fieldInTransaction
	fieldCacheable
	fieldWhyNot
	fieldPointLookup
	fieldKeys
)

// shapeFields are the fields that the memo key (digest, db, user, kind and
// the flags) determines. sql and params vary within a shape; client_addr
// is not in the key, so a decision that reads it cannot be shared either.
const shapeFields = fieldDigest | fieldKind | fieldTables | fieldDB | fieldUser |
	fieldPrepared | fieldInTransaction | fieldCacheable | fieldWhyNot | fieldPointLookup

// view returns a userdata whose fields are read through index. One is
// made per state and reused for every call, so that building q costs no
// allocation; fields are fetched from the Go struct only when read.
func (st *state) view(index lua.LGFunction) *lua.LUserData {
	L := st.L
	ud := L.NewUserData()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(index))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("the statement is read-only (copy the fields you need into a local table)")
		return 0
	}))
	mt.RawSetString("__metatable", lua.LString("locked"))
	L.SetMetatable(ud, mt)
	return ud
}

// queryIndex is q's __index.
func (st *state) queryIndex(L *lua.LState) int {
	q := st.q
	name, ok := L.Get(2).(lua.LString)
	if q == nil || !ok {
		L.Push(lua.LNil)
		return 1
	}
	var v lua.LValue = lua.LNil
	switch name {
	case "sql":
		st.touched |= fieldSQL
		v = lua.LString(q.SQL)
	case "digest":
		st.touched |= fieldDigest
		v = lua.LString(q.Digest)
	case "kind":
		st.touched |= fieldKind
		v = lua.LString(q.Kind)
	case "tables":
		st.touched |= fieldTables
		if st.tables == nil {
			st.tables = stringList(L, q.Tables)
		}
		v = st.tables
	case "db":
		st.touched |= fieldDB
		v = lua.LString(q.DB)
	case "user":
		st.touched |= fieldUser
		v = lua.LString(q.User)
	case "client_addr":
		st.touched |= fieldClientAddr
		v = lua.LString(q.ClientAddr)
	case "prepared":
		st.touched |= fieldPrepared
		v = lua.LBool(q.Prepared)
	case "params":
		st.touched |= fieldParams
		if st.params == nil {
			ps := q.Params
			if ps == nil && q.ParamsFunc != nil {
				ps = q.ParamsFunc()
			}
			st.params = st.paramList(ps)
		}
		v = st.params
	case "in_transaction":
		st.touched |= fieldInTransaction
		v = lua.LBool(q.InTransaction)
	case "cacheable":
		st.touched |= fieldCacheable
		v = lua.LBool(q.Cacheable)
	case "why_not":
		st.touched |= fieldWhyNot
		v = lua.LString(q.WhyNot)
	case "point_lookup":
		st.touched |= fieldPointLookup
		v = lua.LBool(q.PointLookup)
	case "keys":
		st.touched |= fieldKeys
		if st.keys == nil {
			st.keys = stringList(L, q.Keys)
		}
		v = st.keys
	}
	L.Push(v)
	return 1
}

// writeIndex is w's __index.
func (st *state) writeIndex(L *lua.LState) int {
	w := st.w
	name, ok := L.Get(2).(lua.LString)
	if w == nil || !ok {
		L.Push(lua.LNil)
		return 1
	}
	var v lua.LValue = lua.LNil
	switch name {
	case "tables":
		if st.tables == nil {
			st.tables = stringList(L, w.Tables)
		}
		v = st.tables
	case "kind":
		v = lua.LString(w.Kind)
	case "sql":
		v = lua.LString(w.SQL)
	case "db":
		v = lua.LString(w.DB)
	case "user":
		v = lua.LString(w.User)
	}
	L.Push(v)
	return 1
}

func stringList(L *lua.LState, ss []string) *lua.LTable {
	t := L.CreateTable(len(ss), 0)
	for _, s := range ss {
		t.Append(lua.LString(s))
	}
	return t
}

// paramList converts prepared-statement parameters. NULL becomes
// mycached.null rather than nil, so that the list has no holes.
func (st *state) paramList(ps []any) *lua.LTable {
	t := st.L.CreateTable(len(ps), 0)
	for _, p := range ps {
		var v lua.LValue
		switch p := p.(type) {
		case nil:
			v = st.null
		case string:
			v = lua.LString(p)
		case []byte:
			v = lua.LString(p)
		case bool:
			v = lua.LBool(p)
		case int:
			v = lua.LNumber(p)
		case int8:
			v = lua.LNumber(p)
		case int16:
			v = lua.LNumber(p)
		case int32:
			v = lua.LNumber(p)
		case int64:
			v = lua.LNumber(p)
		case uint:
			v = lua.LNumber(p)
		case uint8:
			v = lua.LNumber(p)
		case uint16:
			v = lua.LNumber(p)
		case uint32:
			v = lua.LNumber(p)
		case uint64:
			v = lua.LNumber(p)
		case float32:
			v = lua.LNumber(p)
		case float64:
			v = lua.LNumber(p)
		case time.Time:
			v = lua.LString(p.Format("2006-01-02 15:04:05.999999"))
		case fmt.Stringer:
			v = lua.LString(p.String())
		default:
			v = lua.LString(fmt.Sprint(p))
		}
		t.Append(v)
	}
	return t
}

// cellText renders a result cell the way the text protocol sends it.
func cellText(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		f := float64(v)
		if f == float64(int64(f)) {
			return strconv.FormatInt(int64(f), 10), true
		}
		return strconv.FormatFloat(f, 'g', -1, 64), true
	case lua.LBool:
		if v {
			return "1", true
		}
		return "0", true
	}
	return "", false
}
