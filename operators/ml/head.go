package ml

import (
	"fmt"
)

// HeadKind says how a model output becomes columns.
type HeadKind int

const (
	// Classify turns probabilities or logits [N,K] into a label column (int64 class
	// index, or a string when Labels are given) and a float32 score column (the
	// top value).
	Classify HeadKind = iota + 1
	// Embed keeps the output [N, d...] as a tensor column of shape [d...].
	Embed
	// Scalar turns an output [N] or [N,1] into a float32 column.
	Scalar
)

func (k HeadKind) String() string {
	switch k {
	case Classify:
		return "classify"
	case Embed:
		return "embed"
	case Scalar:
		return "scalar"
	}
	return fmt.Sprintf("head(%d)", int(k))
}

// Head maps one model output to output columns.
type Head struct {
	Kind HeadKind
	// Output is the model output's name.
	Output string
	// Columns name the produced columns: Classify [label, score] (defaults
	// "label", "score") or [label] alone; Embed and Scalar one name (default: the output's name).
	Columns []string
	// Labels, for Classify, name the classes in index order; nil gives int64
	// class indexes.
	Labels []string
}

// columns returns the column names with defaults filled in.
func (h Head) columns() []string {
	if len(h.Columns) > 0 {
		return h.Columns
	}
	if h.Kind == Classify {
		return []string{"label", "score"}
	}
	return []string{h.Output}
}

// boundHead is a head checked against the model.
type boundHead struct {
	Head
	out      int     // index of the model output
	rowShape []int64 // output shape without the batch dim
	rowSize  int
}
