package relay

import (
	"reflect"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// FuzzStmtTypes runs a statement's executes as a client may send them:
// the first with its types, a later one without. Remembering the types
// (NoteParamTypes) and putting them back for the backend (WithTypes) never
// panics and never changes a value: the execute mycached forwards decodes
// to what the client's meant with the types it sent before.
func FuzzStmtTypes(f *testing.F) {
	f.Fuzz(func(t *testing.T, n uint8, first, later []byte) {
		st := &Stmt{Params: uint16(n % 24)}
		NoteParamTypes(st, first)
		if st.Types != nil && len(st.Types) != 2*int(st.Params) {
			t.Fatalf("noted %d type bytes for %d params", len(st.Types), st.Params)
		}
		q := WithTypes(st, later)
		want := wire.DecodeParams(later, int(st.Params), st.Types)
		if got := wire.DecodeParams(q, int(st.Params), nil); st.Types != nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("forwarded execute decodes to %+v, the client's to %+v", got, want)
		}
		st.LongData = true
		if got := ExecuteParams(st, later); got != nil {
			t.Fatalf("got %+v after long data, want nil", got)
		}
	})
}

// TestExecuteParamsLongData reads no parameters from an execute that
// follows COM_STMT_SEND_LONG_DATA: the blob sent so is missing from it,
// and the values after it would be read from the wrong bytes.
func TestExecuteParamsLongData(t *testing.T) {
	// UPDATE t SET b=? WHERE id=? AND s=?, with b sent as long data: the
	// execute carries only id, a LONGLONG 256, and s, "\x00rest".
	p := []byte{mysql.COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1,
		mysql.MYSQL_TYPE_BLOB, 0, mysql.MYSQL_TYPE_LONGLONG, 0, mysql.MYSQL_TYPE_VAR_STRING, 0,
		0, 1, 0, 0, 0, 0, 0, 0,
		5, 0, 'r', 'e', 's', 't'}
	st := &Stmt{Params: 3}
	// Read as if b were in the packet, id comes out as another number.
	if got := wire.DecodeParams(p, 3, nil); got == nil || got[1].Text == "256" {
		t.Fatalf("got %+v, want a misread id", got)
	}
	st.LongData = true
	if got := ExecuteParams(st, p); got != nil {
		t.Errorf("got %+v, want nil", got)
	}
}
