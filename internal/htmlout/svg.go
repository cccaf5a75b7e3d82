package htmlout

import (
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The page's plots are drawn here as SVG text, by hand: a line plot of
// step lines and bar charts, with linear axes and round ticks. A plotting
// library would do the same at the price of its start-up: gonum/plot parses
// a dozen TrueType fonts when its package initializes, in every run of the
// program, a page written or not. With it, `fastsim --help` took 5.9 ms of
// CPU (median of 30 runs on the 2-core machine of bench/RESULTS.md), 3.2 ms
// without it, and the binary was 19 MB rather than 8 MB.

// Sizes in SVG user units (CSS pixels, 96 to the inch).
const (
	pxPerIn  = 96
	fontPx   = 12 // tick labels and the legend
	titlePx  = 14
	charPx   = 7 // about the width of a fontPx character, for margins
	tickPx   = 5
	padPx    = 8
	numTicks = 6 // about this many ticks on a numeric axis
)

// palette is the colour of each series in turn (the soft colours of
// gonum/plot/plotutil.SoftColors, which the page used before).
var palette = []string{"#f15a60", "#7ac36a", "#5a9bd4", "#faa75b", "#9e67ab", "#ce7058", "#d77fb4"}

func colour(i int) string { return palette[i%len(palette)] }

// canvas accumulates one plot's SVG elements.
type canvas struct {
	b    strings.Builder
	w, h float64
}

func newCanvas(wIn, hIn float64) *canvas {
	c := &canvas{w: wIn * pxPerIn, h: hIn * pxPerIn}
	c.b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="`)
	c.num(c.w)
	c.b.WriteString(`" height="`)
	c.num(c.h)
	c.b.WriteString(`" viewBox="0 0 `)
	c.num(c.w)
	c.b.WriteByte(' ')
	c.num(c.h)
	c.b.WriteString(`" font-size="` + strconv.Itoa(fontPx) + `">` + "\n")
	return c
}

// num writes a coordinate with at most two decimals.
func (c *canvas) num(v float64) {
	c.b.WriteString(strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64))
}

func (c *canvas) line(x1, y1, x2, y2 float64, stroke string) {
	c.b.WriteString(`<line x1="`)
	c.num(x1)
	c.b.WriteString(`" y1="`)
	c.num(y1)
	c.b.WriteString(`" x2="`)
	c.num(x2)
	c.b.WriteString(`" y2="`)
	c.num(y2)
	c.b.WriteString(`" stroke="` + stroke + `"/>` + "\n")
}

func (c *canvas) rect(x, y, w, h float64, fill string) {
	c.b.WriteString(`<rect x="`)
	c.num(x)
	c.b.WriteString(`" y="`)
	c.num(y)
	c.b.WriteString(`" width="`)
	c.num(max(w, 0))
	c.b.WriteString(`" height="`)
	c.num(max(h, 0))
	c.b.WriteString(`" fill="` + fill + `"/>` + "\n")
}

// text writes s (escaped) at (x, y); anchor is start, middle or end;
// rotate turns it by -90 degrees about its anchor.
func (c *canvas) text(x, y float64, s, anchor string, px int, rotate bool) {
	c.b.WriteString(`<text x="`)
	c.num(x)
	c.b.WriteString(`" y="`)
	c.num(y)
	c.b.WriteString(`" text-anchor="` + anchor + `"`)
	if px != fontPx {
		c.b.WriteString(` font-size="` + strconv.Itoa(px) + `"`)
	}
	if rotate {
		c.b.WriteString(` transform="rotate(-90 `)
		c.num(x)
		c.b.WriteByte(' ')
		c.num(y)
		c.b.WriteString(`)"`)
	}
	c.b.WriteString(`>` + html.EscapeString(s) + "</text>\n")
}

// svgText is a plot's SVG, ready to be put in the page as it is: it is
// made of numbers and escaped names.
type svgText string

// html ends the SVG.
func (c *canvas) html() svgText {
	c.b.WriteString("</svg>")
	return svgText(c.b.String())
}

// axis is a linear scale from [lo, hi] onto pixels [p0, p1].
type axis struct{ lo, hi, p0, p1 float64 }

func (a axis) at(v float64) float64 {
	if a.hi == a.lo {
		return a.p0
	}
	return a.p0 + (v-a.lo)/(a.hi-a.lo)*(a.p1-a.p0)
}

// ticks returns round values (1, 2 or 5 times a power of ten apart) that
// cover [lo, hi] with about n intervals, the new lo and hi (the outer
// ticks), and how many decimals their labels need.
func ticks(lo, hi float64, n int) ([]float64, float64, float64, int) {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if step >= raw {
			break
		}
		step = m * mag
	}
	first := math.Floor(lo/step) * step
	last := math.Ceil(hi/step) * step
	var out []float64
	for i := 0; ; i++ {
		v := first + float64(i)*step
		if v > last+step/2 {
			break
		}
		out = append(out, v)
	}
	dec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	return out, first, last, dec
}

func label(v float64, dec int) string {
	if math.Abs(v) < 1e-12 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// frame draws a title above the plot area [x0, x1] x [y0, y1] and its box.
func (c *canvas) frame(title string, x0, y0, x1, y1 float64) {
	c.text((x0+x1)/2, padPx+titlePx, title, "middle", titlePx, false)
	c.b.WriteString(`<rect x="`)
	c.num(x0)
	c.b.WriteString(`" y="`)
	c.num(y0)
	c.b.WriteString(`" width="`)
	c.num(x1 - x0)
	c.b.WriteString(`" height="`)
	c.num(y1 - y0)
	c.b.WriteString(`" fill="none" stroke="#444"/>` + "\n")
}

// xTicks draws a numeric axis's ticks and labels under the plot area, and
// its label under them.
func (c *canvas) xTicks(ax axis, vals []float64, dec int, y float64, name string) {
	for _, v := range vals {
		x := ax.at(v)
		c.line(x, y, x, y+tickPx, "#444")
		c.text(x, y+tickPx+fontPx, label(v, dec), "middle", fontPx, false)
	}
	if name != "" {
		c.text((ax.p0+ax.p1)/2, y+tickPx+2*fontPx+padPx, name, "middle", fontPx, false)
	}
}

// yTicks draws a numeric axis's ticks and labels left of the plot area,
// and its label turned along it.
func (c *canvas) yTicks(ax axis, vals []float64, dec int, x float64, name string) {
	widest := 0
	for _, v := range vals {
		y := ax.at(v)
		c.line(x-tickPx, y, x, y, "#444")
		s := label(v, dec)
		widest = max(widest, len(s))
		c.text(x-tickPx-2, y+fontPx/3, s, "end", fontPx, false)
	}
	if name != "" {
		c.text(x-tickPx-2-float64(widest*charPx)-padPx, (ax.p0+ax.p1)/2, name, "middle", fontPx, true)
	}
}

// point is one sample of a line.
type point struct{ X, Y float64 }

// series is one line of a line plot.
type series struct {
	name string
	pts  []point
}

// stepPlot draws each series as a step line (a value holds until the next
// point's time), with a legend in the top left corner.
func stepPlot(title, xName, yName string, ss []series, wIn, hIn float64) svgText {
	c := newCanvas(wIn, hIn)
	xlo, xhi, yhi := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for _, p := range s.pts {
			xlo, xhi, yhi = min(xlo, p.X), max(xhi, p.X), max(yhi, p.Y)
		}
	}
	if xlo > xhi {
		xlo, xhi = 0, 1
	}
	xv, xlo, xhi, xdec := ticks(xlo, xhi, numTicks)
	yv, ylo, yhi, ydec := ticks(0, yhi, numTicks)
	x0, x1 := float64(9*charPx+2*fontPx+2*padPx), c.w-padPx-charPx*3
	y0, y1 := float64(2*padPx+titlePx), c.h-(tickPx+3*fontPx+2*padPx)
	xa, ya := axis{xlo, xhi, x0, x1}, axis{ylo, yhi, y1, y0}
	c.frame(title, x0, y0, x1, y1)
	c.xTicks(xa, xv, xdec, y1, xName)
	c.yTicks(ya, yv, ydec, x0, yName)
	for i, s := range ss {
		if len(s.pts) == 0 {
			continue
		}
		c.b.WriteString(`<path fill="none" stroke="` + colour(i) + `" stroke-width="1.6" d="M`)
		c.num(xa.at(s.pts[0].X))
		c.b.WriteByte(' ')
		c.num(ya.at(s.pts[0].Y))
		for _, p := range s.pts[1:] {
			c.b.WriteString("H")
			c.num(xa.at(p.X))
			c.b.WriteString("V")
			c.num(ya.at(p.Y))
		}
		c.b.WriteString(`"/>` + "\n")
		ly := y0 + padPx + float64(i+1)*(fontPx+4)
		c.line(x0+padPx, ly-fontPx/3, x0+padPx+20, ly-fontPx/3, colour(i))
		c.text(x0+2*padPx+20, ly, s.name, "start", fontPx, false)
	}
	return c.html()
}

// barPlot draws one vertical bar per value, named under it.
func barPlot(title, yName string, names []string, vals []float64, wIn, hIn float64) svgText {
	c := newCanvas(wIn, hIn)
	x0, x1 := float64(9*charPx+2*fontPx+2*padPx), c.w-padPx
	y0, y1 := float64(2*padPx+titlePx), c.h-(tickPx+2*fontPx+padPx)
	c.frame(title, x0, y0, x1, y1)
	if len(vals) == 0 {
		return c.html()
	}
	hi := max(0, slices.Max(vals))
	yv, ylo, yhi, ydec := ticks(0, hi, numTicks)
	ya := axis{ylo, yhi, y1, y0}
	c.yTicks(ya, yv, ydec, x0, yName)
	slot := (x1 - x0) / float64(len(vals))
	bar := min(28*pxPerIn/72, slot*0.8) // 28 points wide where there is room
	for i, v := range vals {
		mid := x0 + (float64(i)+0.5)*slot
		c.rect(mid-bar/2, ya.at(v), bar, y1-ya.at(v), colour(0))
		c.line(mid, y1, mid, y1+tickPx, "#444")
		c.text(mid, y1+tickPx+fontPx, names[i], "middle", fontPx, false)
	}
	return c.html()
}

// hbarPlot draws one horizontal bar per value, the first at the top, named
// at its left, so long names stay readable (they may reach into the page's
// margin: see the style sheet).
func hbarPlot(title, xName string, names []string, vals []float64, col int, hIn float64) svgText {
	c := newCanvas(9, hIn)
	widest := 0
	for _, n := range names {
		widest = max(widest, len(n))
	}
	x0, x1 := float64(min(widest, 40)*charPx+tickPx+padPx), c.w-padPx-charPx*3
	y0, y1 := float64(2*padPx+titlePx), c.h-(tickPx+3*fontPx+2*padPx)
	c.frame(title, x0, y0, x1, y1)
	if len(vals) == 0 {
		return c.html()
	}
	hi := max(0, slices.Max(vals))
	xv, xlo, xhi, xdec := ticks(0, hi, numTicks)
	xa := axis{xlo, xhi, x0, x1}
	c.xTicks(xa, xv, xdec, y1, xName)
	slot := (y1 - y0) / float64(len(vals))
	bar := min(12*pxPerIn/72, slot*0.8) // 12 points thick where there is room
	for i, v := range vals {
		mid := y0 + (float64(i)+0.5)*slot
		c.rect(x0, mid-bar/2, xa.at(v)-x0, bar, colour(col))
		c.line(x0-tickPx, mid, x0, mid, "#444")
		c.text(x0-tickPx-2, mid+fontPx/3, names[i], "end", fontPx, false)
	}
	return c.html()
}
