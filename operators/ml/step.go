package ml

import (
	"errors"
	"fmt"
	"image"
	"slices"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/operators/pixels"
)

// Step is a per-record transform that an Operator applies around its
// Model: Operator.Pre before the batcher (a column the model cannot take,
// made into one it can: encoded images into tensors), Operator.Post on each
// output record (the model's raw output decoded into the query's rows: a
// detector's boxes, one row each; a recogniser's text). A step runs in the
// operator's callbacks, on the worker that runs the model, so what it
// makes never crosses a link. Apply does not release rec; the caller
// releases the result. A row that a step cannot make is a null (Pre) or
// no row (Post), never a failed record: one bad image costs its own row.
type Step interface {
	Schema() *arrow.Schema
	Apply(mem memory.Allocator, rec arrow.Record) (arrow.Record, error)
}

// Hidden columns that an image Pre step adds for the model and its Post
// step; they never leave the operator.
const (
	ImageTensorColumn = "$image"
	ImagePlaceColumn  = "$placed"
	RawOutputColumn   = "$raw"
)

// ImageStep decodes the encoded images (PNG, JPEG, GIF) of one binary
// column into the tensor a vision model takes (ImagePrep), appended as
// ImageTensorColumn, and records where each image landed in it as
// ImagePlaceColumn ([source width, source height, scale x, scale y]), which
// a detector's Post step needs to map boxes back to the image's pixels. A
// null or undecodable image gives null tensors, which the model counts as a
// failed row.
type ImageStep struct {
	col     int
	prep    ImagePrep
	out     *arrow.Schema
	scratch *image.RGBA
	// Failed counts the images that did not decode.
	Failed int64
}

// NewImageStep prepares column col of in (binary or string bytes) by prep.
func NewImageStep(in *arrow.Schema, col int, prep ImagePrep) (*ImageStep, error) {
	if err := prep.Check(); err != nil {
		return nil, err
	}
	if col < 0 || col >= in.NumFields() {
		return nil, fmt.Errorf("%w: image step: no column %d in %s", ErrSchema, col, fieldNames(in))
	}
	if id := in.Field(col).Type.ID(); id != arrow.BINARY && id != arrow.LARGE_BINARY {
		return nil, fmt.Errorf("%w: image step: column %q is %s, want BLOB (encoded images)", ErrSchema, in.Field(col).Name, in.Field(col).Type)
	}
	fs := append(slices.Clone(in.Fields()), TensorField(ImageTensorColumn, prep.Shape()), TensorField(ImagePlaceColumn, []int64{4}))
	md := in.Metadata()
	return &ImageStep{col: col, prep: prep, out: arrow.NewSchema(fs, &md)}, nil
}

// Schema is the input's columns, the tensor and the placement.
func (s *ImageStep) Schema() *arrow.Schema { return s.out }

// Prep is the recipe.
func (s *ImageStep) Prep() ImagePrep { return s.prep }

// Apply decodes and fills every row's tensor.
func (s *ImageStep) Apply(mem memory.Allocator, rec arrow.Record) (arrow.Record, error) {
	n := int(rec.NumRows())
	col, ok := rec.Column(s.col).(interface {
		Value(int) []byte
		IsNull(int) bool
	})
	if !ok {
		return nil, fmt.Errorf("%w: image step: column %d is %s", ErrSchema, s.col, rec.Column(s.col).DataType())
	}
	size := int(product(s.prep.Shape()))
	tbuf, vals := newFloat32Buffer(mem, n*size)
	defer tbuf.Release()
	pbuf, place := newFloat32Buffer(mem, n*4)
	defer pbuf.Release()
	failed := make([]bool, n)
	nFailed := 0
	for r := range n {
		if col.IsNull(r) {
			failed[r] = true
			nFailed++
			continue
		}
		// Through the worker's frame cache: crop_image, on this worker
		// after the detector, cuts its boxes from the frame decoded here.
		// Its pixels are charged to the query while the tensor is filled:
		// a frame its memory cannot hold fails the batch, for its memory.
		img, release, err := pixels.Shared.DecodeWithin(col.Value(r), mem)
		if errors.Is(err, dataflow.ErrMemory) {
			return nil, err
		}
		if err != nil {
			failed[r] = true
			nFailed++
			s.Failed++
			continue
		}
		var pl Placed
		pl, s.scratch = s.prep.Fill(vals[r*size:(r+1)*size], img, s.scratch)
		release()
		copy(place[4*r:], []float32{float32(pl.SrcW), float32(pl.SrcH), float32(pl.ScaleX), float32(pl.ScaleY)})
	}
	var nulls *memory.Buffer
	if nFailed > 0 {
		nulls = validity(mem, n, failed, nFailed)
		defer nulls.Release()
	}
	cols := make([]arrow.Array, 0, rec.NumCols()+2)
	cols = append(cols, rec.Columns()...)
	t := newTensorArray(s.prep.Shape(), n, tbuf, nulls, nFailed)
	defer t.Release()
	p := newTensorArray([]int64{4}, n, pbuf, nulls, nFailed)
	defer p.Release()
	cols = append(cols, t, p)
	return array.NewRecord(s.out, cols, int64(n)), nil
}

// KeepStep drops the hidden columns between a record's first keep columns
// and its last tail ones (the image tensor and placement between the
// query's columns and a model's heads).
type KeepStep struct {
	keep, tail int
	out        *arrow.Schema
}

// NewKeepStep keeps in's first keep and last tail columns.
func NewKeepStep(in *arrow.Schema, keep, tail int) (*KeepStep, error) {
	n := in.NumFields()
	if keep < 0 || tail < 0 || keep+tail > n {
		return nil, fmt.Errorf("%w: keep step: %d and %d of %d columns", ErrSchema, keep, tail, n)
	}
	fs := append(slices.Clone(in.Fields()[:keep]), in.Fields()[n-tail:]...)
	md := in.Metadata()
	return &KeepStep{keep: keep, tail: tail, out: arrow.NewSchema(fs, &md)}, nil
}

// Schema is the kept columns.
func (s *KeepStep) Schema() *arrow.Schema { return s.out }

// Apply keeps the columns.
func (s *KeepStep) Apply(_ memory.Allocator, rec arrow.Record) (arrow.Record, error) {
	n := int(rec.NumCols())
	cols := append(slices.Clone(rec.Columns()[:s.keep]), rec.Columns()[n-s.tail:]...)
	return array.NewRecord(s.out, cols, rec.NumRows()), nil
}
