package ml

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
)

// CTCDictionary maps a CTC recogniser's classes to text: class 0 is the
// blank, class i the dictionary's i-th symbol (1-based), and, where the
// network has one class more than the dictionary's symbols and the blank,
// the last class is a space (PaddleOCR's use_space_char).
type CTCDictionary []string

// ParseCTCDictionary reads one symbol a line (a trailing newline ends the
// last line; "\r\n" is one line end).
func ParseCTCDictionary(src string) (CTCDictionary, error) {
	src = strings.TrimSuffix(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	if src == "" {
		return nil, fmt.Errorf("%w: ctc dictionary: no symbols", ErrConfig)
	}
	return strings.Split(src, "\n"), nil
}

// CTCGreedy decodes one row of T steps of k class probabilities: the most
// likely class at each step, repeats collapsed, blanks dropped. Its
// confidence is the mean probability of the kept steps (1 for empty text,
// as PaddleOCR reports nothing to doubt).
func CTCGreedy(probs []float32, k int, dict CTCDictionary, sb *strings.Builder) (string, float32) {
	sb.Reset()
	prev := -1
	var sum float64
	n := 0
	for t := 0; t+k <= len(probs); t += k {
		row := probs[t : t+k]
		best, bv := 0, row[0]
		for c, v := range row {
			if v > bv {
				best, bv = c, v
			}
		}
		if best != 0 && best != prev {
			switch {
			case best <= len(dict):
				sb.WriteString(dict[best-1])
			default:
				sb.WriteByte(' ')
			}
			sum += float64(bv)
			n++
		}
		prev = best
	}
	if n == 0 {
		return "", 1
	}
	return sb.String(), float32(sum / float64(n))
}

// CTCStep is the Post step of a CTC recogniser: each row's raw output
// [T, classes] becomes its text and the confidence of it, after the
// query's columns. A row the model failed on gets nulls.
type CTCStep struct {
	keep, raw int
	k         int
	dict      CTCDictionary
	out       *arrow.Schema
	sb        strings.Builder
}

// NewCTCStep decodes in's raw output column into out (text VARCHAR, and
// optionally a FLOAT confidence) after in's first keep columns.
func NewCTCStep(in *arrow.Schema, keep int, out []arrow.Field, dict CTCDictionary) (*CTCStep, error) {
	s := &CTCStep{keep: keep, raw: -1, dict: dict}
	for i, f := range in.Fields() {
		if f.Name == RawOutputColumn {
			s.raw = i
		}
	}
	if s.raw < 0 || keep > in.NumFields() {
		return nil, fmt.Errorf("%w: ctc decode: want the column %s, have %s", ErrSchema, RawOutputColumn, fieldNames(in))
	}
	shape, err := FieldShape(in.Field(s.raw))
	if err != nil {
		return nil, fmt.Errorf("ctc decode: %w", err)
	}
	if len(shape) != 2 {
		return nil, fmt.Errorf("%w: ctc decode: the recogniser's output rows are [%s], want [steps, classes]", ErrSchema, FormatDims(shape))
	}
	s.k = int(shape[1])
	if s.k != len(dict)+1 && s.k != len(dict)+2 {
		return nil, fmt.Errorf("%w: ctc decode: %d classes for a dictionary of %d symbols (want %d, or %d with a space)", ErrSchema, s.k, len(dict), len(dict)+1, len(dict)+2)
	}
	if len(out) < 1 || len(out) > 2 || out[0].Type.ID() != arrow.STRING || (len(out) == 2 && out[1].Type.ID() != arrow.FLOAT32) {
		return nil, fmt.Errorf("%w: ctc decode: want the columns (text VARCHAR[, confidence FLOAT]), got %v", ErrSchema, out)
	}
	fs := append(slices.Clone(in.Fields()[:keep]), out...)
	md := in.Metadata()
	s.out = arrow.NewSchema(fs, &md)
	return s, nil
}

// Schema is the query's columns, the text and its confidence.
func (s *CTCStep) Schema() *arrow.Schema { return s.out }

// Apply decodes every row.
func (s *CTCStep) Apply(mem memory.Allocator, rec arrow.Record) (arrow.Record, error) {
	vals, size, err := TensorValues(rec.Column(s.raw))
	if err != nil {
		return nil, err
	}
	raw := rec.Column(s.raw)
	n := int(rec.NumRows())
	tb := array.NewStringBuilder(mem)
	defer tb.Release()
	cb := array.NewFloat32Builder(mem)
	defer cb.Release()
	for r := range n {
		if raw.IsNull(r) {
			tb.AppendNull()
			cb.AppendNull()
			continue
		}
		text, conf := CTCGreedy(vals[r*size:(r+1)*size], s.k, s.dict, &s.sb)
		tb.Append(text)
		cb.Append(conf)
	}
	cols := make([]arrow.Array, 0, s.out.NumFields())
	for i := range s.keep {
		c := rec.Column(i)
		c.Retain()
		cols = append(cols, c)
	}
	cols = append(cols, tb.NewArray())
	if s.out.NumFields() > s.keep+1 {
		cols = append(cols, cb.NewArray())
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecord(s.out, cols, int64(n)), nil
}
