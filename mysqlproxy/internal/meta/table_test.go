package meta

import "testing"

func TestGeneratedVaries(t *testing.T) {
	for _, c := range []struct{ create, want string }{
		{"CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `a` int(11) DEFAULT NULL\n) ENGINE=InnoDB", ""},
		{"CREATE TABLE `t` (\n  `b` int(11) GENERATED ALWAYS AS (`a` + 1) VIRTUAL INVISIBLE COMMENT 'now() ) VIRTUAL',\n) ENGINE=InnoDB", ""},
		{"CREATE TABLE `t` (\n  `c` varchar(10) GENERATED ALWAYS AS (concat('a)b\\')',`a`,\"x)\")) STORED,\n) ENGINE=InnoDB", ""},
		{"CREATE TABLE `t` (\n  `n` datetime(6) GENERATED ALWAYS AS (current_timestamp(6)) VIRTUAL,\n) ENGINE=InnoDB", "generated:nondeterministic:current_timestamp"},
		{"CREATE TABLE `t` (\n  `x` double GENERATED ALWAYS AS (rand() * `id`) VIRTUAL\n) ENGINE=InnoDB", "generated:nondeterministic:rand"},
		{"CREATE TABLE `t` (\n  `x` int GENERATED ALWAYS AS (1 +\n", "generated-unreadable"},
		// A comment that reads like a generated column is not one.
		{"CREATE TABLE `t` (\n  `a` int COMMENT '\n GENERATED ALWAYS AS (rand()) VIRTUAL'\n) ENGINE=InnoDB", ""},
	} {
		if got := generatedVaries(c.create); got != c.want {
			t.Errorf("generatedVaries(%q) = %q, want %q", c.create, got, c.want)
		}
	}
}
