package kvproxy

import (
	"fmt"
	"testing"
)

func TestReadVars(t *testing.T) {
	vars := sysVars(1 << 20)
	for _, c := range []struct {
		sql  string
		want string // cols|rows, "error NAME" or "not ours"
	}{
		{"SELECT @@version_comment LIMIT 1", "[@@version_comment] [mycached key/value listener]"},
		{"select @@max_allowed_packet,@@system_time_zone,@@time_zone,@@auto_increment_increment", "[@@max_allowed_packet @@system_time_zone @@time_zone @@auto_increment_increment] [1048576 UTC SYSTEM 1]"},
		{"SELECT @@session.autocommit AS ac, @@GLOBAL.tx_isolation iso;", "[ac iso] [1 REPEATABLE-READ]"},
		{"SELECT @@nope", "error nope"},
		{"SELECT @@version, 1", "not ours"},
		{"SELECT 'x'", "not ours"},
		{"SELECT @@version LIMIT 0", "not ours"},
		{"SHOW VARIABLES LIKE 'max_allowed%'", "[Variable_name Value] [max_allowed_packet 1048576]"},
		{"SHOW SESSION VARIABLES LIKE 'auto_increment_increment'", "[Variable_name Value] [auto_increment_increment 1]"},
		{"show variables where Variable_name in ('autocommit', 'time_zone')", "[Variable_name Value] [autocommit ON] [time_zone SYSTEM]"},
		{"SHOW VARIABLES WHERE variable_name = 'tx_read_only'", "[Variable_name Value] [tx_read_only OFF]"},
		{"SHOW VARIABLES WHERE value = 'x'", "not ours"},
		{"SHOW VARIABLES LIKE 'zz%'", "[Variable_name Value]"},
		{"SHOW TABLES", "not ours"},
	} {
		a, ok := readVars(c.sql, vars)
		var got string
		switch {
		case !ok:
			got = "not ours"
		case a.unknown != "":
			got = "error " + a.unknown
		default:
			got = fmt.Sprint(a.cols)
			for _, r := range a.rows {
				var row []string
				for _, v := range r {
					row = append(row, *v)
				}
				got += " " + fmt.Sprint(row)
			}
		}
		if got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.sql, got, c.want)
		}
	}
}
