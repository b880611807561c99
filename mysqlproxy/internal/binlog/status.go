package binlog

import (
	"encoding/binary"

	"github.com/pingcap/tidb/pkg/parser/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// The status variables of a QUERY event that say how the server read its
// text (see the server's log_event.h for the codes and their lengths).
const (
	qFlags2            = 0
	qSQLMode           = 1
	qCatalog           = 2
	qAutoIncrement     = 3
	qCharset           = 4
	qTimeZone          = 5
	qCatalogNZ         = 6
	qLCTimeNames       = 7
	qCharsetDatabase   = 8
	qTableMapForUpdate = 9
	qMasterDataWritten = 10
	qInvoker           = 11
	qUpdatedDBNames    = 12
	qMicroseconds      = 13
	qHRNow             = 128
	qXID               = 129
	qGTIDFlags3        = 130
)

// queryDialect reads, from a QUERY event's status variables, the sql_mode
// and client character set its text was written in. charsets maps the
// server's collation ids to character sets. ok is false when either is
// missing or the variables cannot be read.
func queryDialect(status []byte, charsets map[uint16]string) (d sqlinfo.Dialect, ok bool) {
	var haveMode, haveCharset bool
	fixed := map[byte]int{
		qFlags2: 4, qSQLMode: 8, qAutoIncrement: 4, qCharset: 6, qLCTimeNames: 2,
		qCharsetDatabase: 2, qTableMapForUpdate: 8, qMasterDataWritten: 4,
		qMicroseconds: 3, qHRNow: 3, qXID: 8, qGTIDFlags3: 1,
	}
	for i := 0; i < len(status) && !(haveMode && haveCharset); {
		code := status[i]
		i++
		if n, isFixed := fixed[code]; isFixed {
			if i+n > len(status) {
				return d, false
			}
			v := status[i : i+n]
			switch code {
			case qSQLMode:
				// The bits are the server's, which the parser's follow.
				m := mysql.SQLMode(binary.LittleEndian.Uint64(v))
				d.ANSIQuotes = m.HasANSIQuotesMode()
				d.NoBackslashEscapes = m.HasNoBackslashEscapesMode()
				haveMode = true
			case qCharset:
				cs, known := charsets[binary.LittleEndian.Uint16(v)]
				if !known {
					return d, false
				}
				d.Charset = cs
				haveCharset = true
			}
			i += n
			continue
		}
		switch code {
		case qTimeZone, qCatalogNZ:
			if i >= len(status) {
				return d, false
			}
			i += 1 + int(status[i])
		case qCatalog:
			if i >= len(status) {
				return d, false
			}
			i += 1 + int(status[i]) + 1
		case qInvoker:
			for range 2 {
				if i >= len(status) {
					return d, false
				}
				i += 1 + int(status[i])
			}
		default:
			// A code whose length is not known: nothing after it can be
			// read.
			return d, false
		}
	}
	return d, haveMode && haveCharset
}
