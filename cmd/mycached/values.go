package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The flag.Value types below return errors that name the bad value but not
// the flag, because the same value may come from the command line or from
// a line of the YAML file, and the caller knows which.

type stringValue struct{ p *string }

func (v stringValue) Set(s string) error { *v.p = s; return nil }
func (v stringValue) String() string     { return *v.p }

type boolValue struct{ p *bool }

func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q is not a boolean (true or false)", s)
	}
	*v.p = b
	return nil
}
func (v boolValue) String() string   { return strconv.FormatBool(*v.p) }
func (v boolValue) IsBoolFlag() bool { return true }

// intValue holds a whole number of at least min.
type intValue struct {
	p   *int
	min int
}

func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < v.min {
		return fmt.Errorf("%q is not a whole number of at least %d", s, v.min)
	}
	*v.p = n
	return nil
}
func (v intValue) String() string { return strconv.Itoa(*v.p) }

type durationValue struct{ p *time.Duration }

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return fmt.Errorf("%q is not a duration such as 50ms, 5s or 1m", s)
	}
	*v.p = d
	return nil
}

// String drops zero trailing units, so that --help says 1m, not 1m0s.
func (v durationValue) String() string {
	s := v.p.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sizeValue holds a byte count written as a plain number or with a unit.
type sizeValue struct{ p *int64 }

func (v sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}
func (v sizeValue) String() string { return formatSize(*v.p) }

// parseSize parses "256MiB", "64MB", "1G", "512k" or "1048576".
func parseSize(s string) (int64, error) {
	// Every unit is a power of 1024 whichever spelling is used, as in MySQL's
	// own option files, where 64M means 64 MiB. Longer suffixes come first so
	// that "mib" is not read as "b".
	sizeUnits := []struct {
		suffix string
		shift  uint
	}{
		{"kib", 10}, {"mib", 20}, {"gib", 30}, {"tib", 40},
		{"kb", 10}, {"mb", 20}, {"gb", 30}, {"tb", 40},
		{"k", 10}, {"m", 20}, {"g", 30}, {"t", 40},
		{"b", 0},
	}
	num := strings.ToLower(strings.TrimSpace(s))
	var shift uint
	for _, u := range sizeUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, shift = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q is not a size such as 1048576, 512KiB, 64MiB or 1GiB", s)
	}
	return n << shift, nil
}

// formatSize writes n with the largest binary unit that divides it exactly.
func formatSize(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// enumValue accepts one of a fixed set of words.
type enumValue struct {
	p       *string
	allowed []string
}

func (v enumValue) Set(s string) error {
	for _, a := range v.allowed {
		if s == a {
			*v.p = s
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", s, strings.Join(v.allowed, ", "))
}
func (v enumValue) String() string { return *v.p }

// listValue is a comma-separated list. The first Set replaces the default;
// a repeated flag appends, so --memcached a:1 --memcached b:1 lists both.
type listValue struct {
	p   *[]string
	set bool
}

func (v *listValue) Set(s string) error {
	var items []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	if v.set {
		*v.p = append(*v.p, items...)
	} else {
		*v.p = append([]string{}, items...)
		v.set = true
	}
	return nil
}
func (v *listValue) String() string { return strings.Join(*v.p, ",") }
