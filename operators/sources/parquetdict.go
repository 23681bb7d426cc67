package sources

import (
	"encoding/binary"
	"slices"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/bitutil"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/metadata"
	"github.com/apache/arrow/go/v17/parquet/schema"
)

// stringDictColumns are the leaf columns of a Parquet file that hold a
// declared STRING column (top-level UTF-8 byte arrays) and are stored as a
// dictionary in every row group read (no page fell back to plain values).
// A reader of one row group reads them as their dictionary instead of
// building each row's string through a builder; convert unpacks them in one
// pass (unpackStrings), and checks each distinct value once for UTF-8. Only
// for one row group at a time: pqarrow cannot read a batch that spans two
// dictionaries. Only for a declared schema, which says STRING.
func stringDictColumns(md *metadata.FileMetaData, groups []int, want *arrow.Schema) []int {
	if want == nil || md == nil {
		return nil
	}
	sc := md.Schema
	var out []int
	for i := range sc.NumColumns() {
		c := sc.Column(i)
		if c.PhysicalType() != parquet.Types.ByteArray || len(c.ColumnPath()) != 1 || c.MaxRepetitionLevel() != 0 {
			continue
		}
		if _, ok := c.LogicalType().(schema.StringLogicalType); !ok {
			continue
		}
		declared := false
		for _, f := range want.Fields() {
			declared = declared || f.Name == c.Name() && f.Type.ID() == arrow.STRING
		}
		if declared && dictionaryOnly(md, groups, i) {
			out = append(out, i)
		}
	}
	return out
}

// dictionaryOnly: column col's data pages are dictionary indices in every
// row group of groups, by the pages' encoding statistics.
func dictionaryOnly(md *metadata.FileMetaData, groups []int, col int) bool {
	const dictionaryPage = 2 // parquet's PageType DICTIONARY_PAGE
	for _, g := range groups {
		cc, err := md.RowGroup(g).ColumnChunk(col)
		if err != nil || !cc.HasDictionaryPage() || len(cc.EncodingStats()) == 0 {
			return false
		}
		for _, st := range cc.EncodingStats() {
			if int(st.PageType) != dictionaryPage && st.Encoding != parquet.Encodings.RLEDict && st.Encoding != parquet.Encodings.PlainDict {
				return false
			}
		}
	}
	return true
}

// unpackStrings turns a dictionary of strings into a plain string array
// (exact-size buffers, one copy per value) and says whether every
// dictionary value is UTF-8, so the rows need no check of their own.
func unpackStrings(mem memory.Allocator, d *array.Dictionary) (arrow.Array, bool) {
	dict := d.Dictionary().(*array.String)
	valid := true
	for i := range dict.Len() {
		if dict.IsValid(i) && !utf8.ValidString(dict.Value(i)) {
			valid = false
			break
		}
	}
	n := d.Len()
	idx := d.Indices().(*array.Int32).Int32Values()
	hasNull := d.NullN() > 0
	// Each dictionary value once: its bytes, length, and (when every value
	// fits) its bytes as one little-endian word, so a row is one 8-byte store
	// and an add instead of a copy call (flags, modes and codes are short).
	nd := dict.Len()
	lens := make([]int32, nd)
	words := make([]uint64, nd)
	short := true
	for j := range nd {
		v := dict.Value(j)
		lens[j] = int32(len(v))
		if len(v) > 8 {
			short = false
			continue
		}
		var w [8]byte
		copy(w[:], v)
		words[j] = binary.LittleEndian.Uint64(w[:])
	}
	total := 0
	for i := range n {
		if !hasNull || d.IsValid(i) {
			total += int(lens[idx[i]])
		}
	}
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
	dataBuf := memory.NewResizableBuffer(mem)
	dataBuf.Resize(total)
	data := dataBuf.Bytes()
	var nullBuf *memory.Buffer
	var nulls []byte
	if hasNull {
		nullBuf = memory.NewResizableBuffer(mem)
		nullBuf.Resize(int(bitutil.BytesForBits(int64(n))))
		nulls = nullBuf.Bytes()
		clear(nulls)
	}
	pos := 0
	if short && !hasNull {
		for i, k := range idx[:n] {
			offs[i] = int32(pos)
			if pos+8 <= total {
				binary.LittleEndian.PutUint64(data[pos:pos+8], words[k])
			} else { // the last few rows: no room for a whole word
				copy(data[pos:], dict.Value(int(k)))
			}
			pos += int(lens[k])
		}
	} else {
		for i := range n {
			offs[i] = int32(pos)
			if hasNull {
				if d.IsNull(i) {
					continue
				}
				bitutil.SetBit(nulls, i)
			}
			pos += copy(data[pos:], dict.Value(int(idx[i])))
		}
	}
	offs[n] = int32(pos)
	ad := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nullBuf, offBuf, dataBuf}, nil, d.NullN(), 0)
	out := array.NewStringData(ad)
	ad.Release()
	offBuf.Release()
	dataBuf.Release()
	if nullBuf != nil {
		nullBuf.Release()
	}
	return out, valid
}

// codeColumns are the STRING columns a reader passes on as dictionary arrays
// (ParquetScan.Codes) when it reads them as their dictionary: a GROUP BY of
// the column then groups on the codes (operators/rel's dictkeys.go) and no
// row's string is built. A dictionary with a value that is not UTF-8 is
// unpacked as before, so that its rows are checked one by one.
type codeColumns struct {
	names map[string]bool
	dict  arrow.ArrayData // the dictionary last checked, and its answer
	valid bool
}

func newCodeColumns(names []string) codeColumns {
	if len(names) == 0 {
		return codeColumns{}
	}
	c := codeColumns{names: map[string]bool{}}
	for _, n := range names {
		c.names[n] = true
	}
	return c
}

// keep: column name's dictionary array d goes on as it is.
func (c *codeColumns) keep(name string, d *array.Dictionary) bool {
	if !c.names[name] || d.Indices().DataType().ID() != arrow.INT32 {
		return false
	}
	dict, ok := d.Dictionary().(*array.String)
	if !ok {
		return false
	}
	if dd := d.Data().Dictionary(); dd != c.dict {
		c.dict, c.valid = dd, true
		for i := range dict.Len() {
			if dict.IsValid(i) && !utf8.ValidString(dict.Value(i)) {
				c.valid = false
				break
			}
		}
	}
	return c.valid
}

// withColumnTypes is schema with each field typed as its column is: a
// string column kept as codes is a dictionary in its batch's schema.
func withColumnTypes(schema *arrow.Schema, cols []arrow.Array) *arrow.Schema {
	var fs []arrow.Field
	for i, c := range cols {
		if arrow.TypeEqual(c.DataType(), schema.Field(i).Type) {
			continue
		}
		if fs == nil {
			fs = slices.Clone(schema.Fields())
		}
		fs[i].Type = c.DataType()
	}
	if fs == nil {
		return schema
	}
	md := schema.Metadata()
	return arrow.NewSchema(fs, &md)
}
