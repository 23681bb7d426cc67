package sinks

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tierflow/tierflow/internal/cli"
)

// TextTable draws tierflow's one text table: run's and submit's results, the
// REPL's, and every SHOW and DESCRIBE listing:
//
//	| label |    n |
//	+-------+------+
//	| Shirt |   12 |
//	(1 row)
//
// A stream has no last row to measure, so the widths are the names' (at
// least 4) and the first rows drawn; a later, wider value pushes its own row
// rather than move the columns above it. Past MaxWidth (when set) a value is
// cut with "…".
type TextTable struct {
	W     io.Writer
	Names []string
	// Right aligns a column to the right (numbers); Min widens one from the
	// start.
	Right []bool
	Min   []int
	// MaxWidth caps a column (0: none); Bold draws the header in bold (a
	// terminal).
	MaxWidth int
	Bold     bool

	widths []int
	headed bool
}

// Rows draws rows of cells, the header first.
func (t *TextTable) Rows(rows [][]string) error {
	if !t.headed {
		t.widths = make([]int, len(t.Names))
		for j, n := range t.Names {
			t.widths[j] = t.cap(max(textWidth(n), 4, minAt(t.Min, j)))
			for _, r := range rows {
				if j < len(r) {
					t.widths[j] = max(t.widths[j], t.cap(textWidth(r[j])))
				}
			}
		}
		if err := t.header(); err != nil {
			return err
		}
	}
	var b strings.Builder
	for _, r := range rows {
		t.line(&b, r)
	}
	_, err := io.WriteString(t.W, b.String())
	return err
}

// End draws the row count (and the header of a result without rows).
func (t *TextTable) End(n int64) error {
	if !t.headed && len(t.Names) > 0 {
		if err := t.Rows(nil); err != nil {
			return err
		}
	}
	_, err := io.WriteString(t.W, "("+cli.Count(n, "row")+")\n")
	return err
}

func (t *TextTable) header() error {
	t.headed = true
	var b strings.Builder
	t.line(&b, t.Names)
	head := strings.TrimSuffix(b.String(), "\n")
	if t.Bold {
		head = "\x1b[1m" + head + "\x1b[0m"
	}
	seps := make([]string, len(t.widths))
	for j, w := range t.widths {
		seps[j] = strings.Repeat("-", w)
	}
	_, err := io.WriteString(t.W, head+"\n+-"+strings.Join(seps, "-+-")+"-+\n")
	return err
}

func (t *TextTable) line(b *strings.Builder, cells []string) {
	b.WriteString("| ")
	for j, w := range t.widths {
		if j > 0 {
			b.WriteString(" | ")
		}
		c := ""
		if j < len(cells) {
			c = cells[j]
		}
		if t.MaxWidth > 0 && textWidth(c) > t.MaxWidth {
			r := []rune(c)
			c = string(r[:t.MaxWidth-1]) + "…"
		}
		pad := strings.Repeat(" ", max(w-textWidth(c), 0))
		if j < len(t.Right) && t.Right[j] {
			b.WriteString(pad + c)
		} else {
			b.WriteString(c + pad)
		}
	}
	b.WriteString(" |\n")
}

func (t *TextTable) cap(w int) int {
	if t.MaxWidth > 0 {
		return min(w, t.MaxWidth)
	}
	return w
}

func minAt(xs []int, j int) int {
	if j < len(xs) {
		return xs[j]
	}
	return 0
}

func textWidth(s string) int { return utf8.RuneCountInString(s) }
