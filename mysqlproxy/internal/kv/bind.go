package kv

import "fmt"

// Bind returns a copy of st with its ? placeholders filled, in order, from
// the values of a COM_STMT_EXECUTE. Each value is the parameter's bytes:
// strings and blobs as sent, and numbers as decimal text (a TTL must be
// one). A nil value is SQL NULL and an error. The result refers to args'
// memory, so it must be executed before args are reused.
func (st *Stmt) Bind(args [][]byte) (*Stmt, error) {
	if len(args) != st.Params {
		return nil, fmt.Errorf("%w: got %d, want %d", ErrParamCount, len(args), st.Params)
	}
	out := &Stmt{Op: st.Op, Value: st.Value, TTL: st.TTL, extraKeys: st.extraKeys}
	if st.Keys != nil {
		out.Keys = append([][]byte(nil), st.Keys...)
	}
	for i, s := range st.paramSlots {
		arg := args[i]
		if arg == nil {
			return nil, fmt.Errorf("%w (parameter %d)", ErrNullParam, i+1)
		}
		switch s.kind {
		case slotKey:
			out.Keys[s.index] = arg
		case slotValue:
			out.Value = arg
		case slotTTL:
			ttl, problem := parseTTL(string(arg))
			if problem != "" {
				return nil, fmt.Errorf("%w %d: %s", ErrBadParam, i+1, problem)
			}
			out.TTL = ttl
		}
	}
	return out, nil
}
