package sqlinfo

import "unsafe"

// Estimates of the bytes an analysis holds, for the memos' byte bounds.
// They count the structs, slice backing arrays and string bytes an
// analysis points to; strings that may share memory with others (a
// literal's text with its statement's) are counted anyway, so an estimate
// errs high, never low.

const (
	sizeInfo     = int64(unsafe.Sizeof(Info{}))
	sizeTable    = int64(unsafe.Sizeof(Table{}))
	sizeSetVar   = int64(unsafe.Sizeof(SetVar{}))
	sizeValue    = int64(unsafe.Sizeof(Value{}))
	sizeString   = int64(unsafe.Sizeof(""))
	sizeSlice    = int64(unsafe.Sizeof([]Value(nil)))
	sizePoint    = int64(unsafe.Sizeof(Point{}))
	sizeInsert   = int64(unsafe.Sizeof(InsertRows{}))
	sizeShapes   = int64(unsafe.Sizeof(shapes{}))
	sizeTemplate = int64(unsafe.Sizeof(template{}))
	sizeSlot     = int64(unsafe.Sizeof(slot{}))
	sizeSkel     = int64(unsafe.Sizeof(skelEntry{}))
	sizePointer  = int64(unsafe.Sizeof((*Info)(nil)))
)

// memSize estimates the bytes info holds.
func (i *Info) memSize() int64 {
	if i == nil {
		return 0
	}
	n := sizeInfo + int64(len(i.Digest)+len(i.WhyNot)+len(i.UseDB))
	n += tablesSize(i.Reads) + tablesSize(i.Writes)
	n += stringsSize(i.DBWide) + stringsSize(i.SetCols)
	for _, s := range i.Sets {
		n += sizeSetVar + int64(len(s.Name)+len(s.Value))
	}
	if p := i.Procedure; p != nil {
		n += tablesSize([]Table{*p})
	}
	if p := i.Point; p != nil {
		n += sizePoint + int64(len(p.Table.DB)+len(p.Table.Name)) + stringsSize(p.Cols) + rowsSize(p.Rows)
	}
	if r := i.Insert; r != nil {
		n += sizeInsert + stringsSize(r.Cols) + rowsSize(r.Rows)
	}
	return n
}

func tablesSize(ts []Table) int64 {
	n := sizeTable * int64(cap(ts))
	for _, t := range ts {
		n += int64(len(t.DB) + len(t.Name))
	}
	return n
}

func stringsSize(ss []string) int64 {
	n := sizeString * int64(cap(ss))
	for _, s := range ss {
		n += int64(len(s))
	}
	return n
}

func rowsSize(rows [][]Value) int64 {
	n := sizeSlice * int64(cap(rows))
	for _, r := range rows {
		n += sizeValue * int64(cap(r))
		for _, v := range r {
			n += int64(len(v.Lit))
		}
	}
	return n
}

// memSize estimates the bytes sh holds, its analyses included.
func (sh *shapes) memSize() int64 {
	n := sizeShapes + stringsSize(sh.sigs) + sizePointer*int64(cap(sh.infos)+cap(sh.tmpls))
	for _, info := range sh.infos {
		n += info.memSize()
	}
	for _, t := range sh.tmpls {
		n += t.memSize()
	}
	return n
}

func (t *template) memSize() int64 {
	if t == nil {
		return 0
	}
	return sizeTemplate + int64(len(t.skel)) + sizeSlot*int64(cap(t.point)+cap(t.ins))
}

// memSize estimates the bytes e holds, its analysis included.
func (e *skelEntry) memSize() int64 {
	return sizeSkel + e.info.memSize() + e.tmpl.memSize()
}
