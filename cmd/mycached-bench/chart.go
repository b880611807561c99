package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// targetColors gives each target the same colour in both panels.
var targetColors = map[string]color.RGBA{
	"direct":        {0x4d, 0x4d, 0x4d, 0xff},
	"query-cache":   {0x9e, 0x9e, 0x9e, 0xff},
	"relay":         {0x8c, 0x56, 0x4b, 0xff},
	"passthrough":   {0xff, 0x7f, 0x0e, 0xff},
	"l1":            {0x1f, 0x77, 0xb4, 0xff},
	"memcached":     {0x2c, 0xa0, 0x2c, 0xff},
	"mycached":      {0x94, 0x67, 0xbd, 0xff},
	"mycached-kv":   {0xe3, 0x77, 0xc2, 0xff},
	"memcached-get": {0xd6, 0x27, 0x28, 0xff},
}

// writeChart draws two panels, throughput and p99 per scenario case, as
// grouped bars on log scales (a heavy query's hits and its direct runs
// are four decades apart), and writes them to path as a PNG.
func writeChart(path string, recs []record) error {
	var groups []string
	var tgts []string
	for _, r := range recs {
		if r.Failed {
			continue
		}
		if g := chartLabel(r); !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
		if !slices.Contains(tgts, r.Target) {
			tgts = append(tgts, r.Target)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	find := func(g, tgt string) (record, bool) {
		for _, r := range recs {
			if !r.Failed && chartLabel(r) == g && r.Target == tgt {
				return r, true
			}
		}
		return record{}, false
	}
	ops := func(r record) float64 { return r.Stats.OpsPerSec }
	p99 := func(r record) float64 { return r.Stats.P99 }
	top, err := logBars("Throughput (ops/s, log scale)", groups, tgts, find, ops, true)
	if err != nil {
		return err
	}
	bottom, err := logBars("p99 latency (ms, log scale; lower is better)", groups, tgts, find, p99, false)
	if err != nil {
		return err
	}
	w := vg.Length(max(1200, 11*len(recs)+40*len(groups)+200))
	h := vg.Length(1400)
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: 10, PadBottom: 10, PadLeft: 10, PadRight: 10, PadY: 20}
	cs := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
	top.Draw(cs[0][0])
	bottom.Draw(cs[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// chartLabel is the short name of r's group under the bars.
func chartLabel(r record) string { return r.Scenario + ": " + r.Case }

// logBars makes one panel: for each group a bar per target measured in
// it, side by side, the bar's height log10 of the value above the lowest
// decade drawn, since plotter.BarChart always starts its bars at 0. With
// legend, it gets the legend and two empty decades on top to hold it.
func logBars(title string, groups, tgts []string, find func(g, t string) (record, bool), value func(record) float64, legend bool) (*plot.Plot, error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range groups {
		for _, t := range tgts {
			if r, ok := find(g, t); ok && value(r) > 0 {
				lo, hi = min(lo, value(r)), max(hi, value(r))
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	floor := math.Floor(math.Log10(lo))
	ceil := math.Ceil(math.Log10(hi))
	if ceil == floor {
		ceil++
	}
	if legend {
		ceil += 2
	}
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 18
	barW := vg.Points(9)
	inLegend := map[string]bool{}
	for gi, g := range groups {
		var here []string
		for _, t := range tgts {
			if r, ok := find(g, t); ok && value(r) > 0 {
				here = append(here, t)
			}
		}
		for k, t := range here {
			r, _ := find(g, t)
			// A value exactly at the floor still gets a sliver of bar.
			bc, err := plotter.NewBarChart(plotter.Values{math.Log10(value(r)) - floor + 0.02}, barW)
			if err != nil {
				return nil, err
			}
			c, ok := targetColors[t]
			if !ok {
				c = color.RGBA{0x17, 0xbe, 0xcf, 0xff}
			}
			bc.Color = c
			bc.LineStyle.Width = 0
			bc.XMin = float64(gi)
			bc.Offset = vg.Length(float64(k)-float64(len(here)-1)/2) * barW
			p.Add(bc)
			if legend && !inLegend[t] {
				inLegend[t] = true
				p.Legend.Add(t, bc)
			}
		}
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = 14
	p.Add(plotter.NewGrid())
	p.NominalX(groups...)
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.X.Tick.Label.Font.Size = 13
	p.Y.Tick.Label.Font.Size = 13
	var ticks []plot.Tick
	for d := floor; d <= ceil; d++ {
		ticks = append(ticks, plot.Tick{Value: d - floor, Label: decade(d)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = 0, ceil-floor
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	return p, nil
}

// decade labels 10^d in plain numbers.
func decade(d float64) string {
	v := math.Pow(10, d)
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	default:
		return fmt.Sprintf("%g", v)
	}
}
