package metrics

import (
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// WriteText writes every metric in the Prometheus text exposition format
// 0.0.4, sorted by name, each family with its # HELP and # TYPE lines.
func (r *Registry) WriteText(w io.Writer) error {
	r.mu.Lock()
	entries := make([]*entry, 0, len(r.entries))
	for _, e := range r.entries {
		entries = append(entries, e)
	}
	r.mu.Unlock()
	// Sample values are read after the lock is dropped: they are atomics, and
	// a GaugeFunc may be slow or take locks of its own.
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	b := make([]byte, 0, 4096)
	for _, e := range entries {
		b = append(b, "# HELP "...)
		b = append(b, e.name...)
		b = append(b, ' ')
		b = append(b, helpEscaper.Replace(e.help)...)
		b = append(b, "\n# TYPE "...)
		b = append(b, e.name...)
		b = append(b, ' ')
		b = append(b, e.m.typeName()...)
		b = append(b, '\n')
		b = e.m.writeSamples(b, e.name)
	}
	_, err := w.Write(b)
	return err
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// appendSample appends one line: name+suffix{label="value"} v.
func appendSample(b []byte, name, suffix, label, value string, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if label != "" {
		b = append(b, '{')
		b = append(b, label...)
		b = append(b, `="`...)
		b = append(b, labelEscaper.Replace(value)...)
		b = append(b, `"}`...)
	}
	b = append(b, ' ')
	b = append(b, formatFloat(v)...)
	return append(b, '\n')
}

// formatFloat spells v as the text format wants, including +Inf, -Inf and NaN.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		// Counts read better as 1234567 than as 1.234567e+06.
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
