package vqalive

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/modelzoo"
)

func readRecords(t testing.TB, path string) []arrow.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []arrow.Record
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		rec.Retain()
		out = append(out, rec)
	}
	return out
}

// wireKB is what rows of rec cost on a relay link, in KiB per row.
func wireKB(t testing.TB, rec arrow.Record) float64 {
	t.Helper()
	n, err := WireBytes(rec, QueryIDLen)
	if err != nil {
		t.Fatal(err)
	}
	return float64(n) / float64(rec.NumRows()) / 1024
}

func within(t testing.TB, what string, catalogKB, measuredKB, tol float64) {
	t.Helper()
	if math.Abs(catalogKB-measuredKB) > tol*measuredKB {
		t.Errorf("%s: catalog says %.4f KB a row, a relay link carries %.4f (more than %.0f%% apart)", what, catalogKB, measuredKB, 100*tol)
	} else {
		t.Logf("%s: catalog %.4f KB a row, measured %.4f", what, catalogKB, measuredKB)
	}
}

// TestCatalogSizesMatchWire: each stream's item_kb is what its rows cost on a
// relay link (header, Arrow IPC batch of RecordRows rows, progress frame),
// measured on the stream files; each variant's output_kb is what the rows
// leaving the model cost there (request_id and the model's output columns,
// the message the plan sends), measured on the model's real outputs.
func TestCatalogSizesMatchWire(t *testing.T) {
	c := loadCatalog(t)
	for _, s := range []struct{ stream, file string }{{"ReadImage", "images.arrow"}, {"ReadSpeech", "speech.arrow"}} {
		recs := readRecords(t, "data/"+s.file)
		var bytes, rows float64
		for _, rec := range recs {
			bytes += wireKB(t, rec) * float64(rec.NumRows())
			rows += float64(rec.NumRows())
			rec.Release()
		}
		st := c.Stream(s.stream)
		if st == nil {
			t.Fatalf("no stream %s", s.stream)
		}
		within(t, s.stream, st.ItemKB, bytes/rows, 0.05)
	}

	env := ortEnv(t)
	mem := memory.NewGoAllocator()
	images := streamValues(t, "images.arrow", "image", 784)
	speech := streamValues(t, "speech.arrow", "speech", SpeechWindow)
	feats := map[string][]float32{}
	for _, name := range []string{"ExtractImageFeature", "SpeechRecognition", "VQA"} {
		m := c.Model(name)
		for _, v := range m.Variants {
			args := [][]float32{images}
			switch name {
			case "SpeechRecognition":
				args = [][]float32{speech}
			case "VQA":
				args = [][]float32{feats["ExtractImageFeature"], feats["SpeechRecognition"]}
			}
			out := run(t, mustSession(t, env, v.File), RecordRows, args...)[0]
			if _, ok := feats[name]; !ok {
				feats[name] = out
			}
			ids, ts := array.NewInt64Builder(mem), array.NewTimestampBuilder(mem, arrow.FixedWidthTypes.Timestamp_us.(*arrow.TimestampType))
			for i := 0; i < RecordRows; i++ {
				ids.Append(int64(i))
				ts.Append(arrow.Timestamp(StreamEpoch.Add(time.Duration(i) * Interval).UnixMicro()))
			}
			fields := []arrow.Field{{Name: "request_id", Type: arrow.PrimitiveTypes.Int64}}
			cols := []arrow.Array{ids.NewArray()}
			if name != "VQA" {
				// The feature leaves with the request id and its event time
				// (the windowed join needs it).
				col, err := ml.NewTensorColumn(mem, []int64{FeatureDim}, out[:RecordRows*FeatureDim])
				if err != nil {
					t.Fatal(err)
				}
				fields = append(fields, arrow.Field{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us}, ml.TensorField(m.Outputs[0].Name, []int64{FeatureDim}))
				cols = append(cols, ts.NewArray(), col)
			} else {
				lb, sb := array.NewStringBuilder(mem), array.NewFloat32Builder(mem)
				k := len(Answers)
				for r := 0; r < RecordRows; r++ {
					a := modelzoo.Argmax(out[r*k : (r+1)*k])
					lb.Append(Answers[a])
					sb.Append(out[r*k+a])
				}
				fields = append(fields, arrow.Field{Name: "answer", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float32})
				cols = append(cols, lb.NewArray(), sb.NewArray())
			}
			rec := array.NewRecord(arrow.NewSchema(fields, nil), cols, RecordRows)
			within(t, name+"/"+v.Name+" output", v.OutputKB, wireKB(t, rec), 0.05)
			rec.Release()
			for _, c := range cols {
				c.Release()
			}
			ids.Release()
			ts.Release()
		}
	}
}
