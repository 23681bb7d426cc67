package sources

import (
	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/decimal128"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// readAsStored makes fr decode the top-level DATE columns and the DECIMAL
// columns stored as INT32 or INT64 as those integers, and returns the type
// each such column stands for. arrow/go copies a DATE or an integer
// DECIMAL value by value through reflect (transferInt,
// transferDecimalInteger: a fifth of TPC-H Q6's CPU), while a plain
// integer column is the page's values as they are (zero copy);
// fromStored then relabels the DATEs (the same four bytes) and widens the
// DECIMALs to 128 bits in one loop. Call it after the manifest's types were
// read for anything else (row-group statistics).
func readAsStored(fr *pqarrow.FileReader) map[string]arrow.DataType {
	out := map[string]arrow.DataType{}
	sch := fr.ParquetReader().MetaData().Schema
	for i := range fr.Manifest.Fields {
		f := &fr.Manifest.Fields[i]
		if !f.IsLeaf() || f.Field == nil || f.ColIndex < 0 || f.ColIndex >= sch.NumColumns() {
			continue
		}
		phys := sch.Column(f.ColIndex).PhysicalType()
		var stored arrow.DataType
		switch f.Field.Type.(type) {
		case *arrow.Date32Type:
			if phys == parquet.Types.Int32 {
				stored = arrow.PrimitiveTypes.Int32
			}
		case *arrow.Decimal128Type:
			switch phys {
			case parquet.Types.Int32:
				stored = arrow.PrimitiveTypes.Int32
			case parquet.Types.Int64:
				stored = arrow.PrimitiveTypes.Int64
			}
		}
		if stored == nil {
			continue
		}
		out[f.Field.Name] = f.Field.Type
		nf := *f.Field
		nf.Type = stored
		f.Field = &nf
	}
	return out
}

// fromStored is a column readAsStored read as its stored integers, as the
// type it stands for; nil when a is not such a column.
func fromStored(mem memory.Allocator, a arrow.Array, to arrow.DataType) arrow.Array {
	d := a.Data()
	switch t := to.(type) {
	case *arrow.Date32Type:
		if a.DataType().ID() != arrow.INT32 {
			return nil
		}
		nd := array.NewData(t, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
		defer nd.Release()
		return array.MakeFromData(nd)
	case *arrow.Decimal128Type:
		n := a.Len()
		vals := memory.NewResizableBuffer(mem)
		vals.Resize(arrow.Decimal128Traits.BytesRequired(n))
		out := arrow.Decimal128Traits.CastFromBytes(vals.Bytes())
		switch src := a.(type) {
		case *array.Int64:
			for i, v := range src.Int64Values() {
				out[i] = decimal128.FromI64(v)
			}
		case *array.Int32:
			for i, v := range src.Int32Values() {
				out[i] = decimal128.FromI64(int64(v))
			}
		default:
			vals.Release()
			return nil
		}
		var valid *memory.Buffer
		if a.NullN() > 0 {
			valid = memory.NewResizableBuffer(mem)
			valid.Resize(int(bitutil.BytesForBits(int64(n))))
			bitutil.CopyBitmap(a.NullBitmapBytes(), d.Offset(), n, valid.Bytes(), 0)
		}
		nd := array.NewData(t, n, []*memory.Buffer{valid, vals}, nil, a.NullN(), 0)
		defer nd.Release()
		vals.Release()
		if valid != nil {
			valid.Release()
		}
		return array.MakeFromData(nd)
	}
	return nil
}
