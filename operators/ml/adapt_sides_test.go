package ml

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/dataflow/builtin"
)

// embSums runs rec through the fake session (its embedding is the sum of
// a row's four values) and returns each row's sum and error.
func embSums(t *testing.T, mem memory.Allocator, rec arrow.Record) ([]float32, []string) {
	t.Helper()
	m, err := Bind(&fakeSession{}, rec.Schema(), Config{Input: "image", Heads: testHeads, MaxBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Infer(mem, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	emb, _, err := TensorValues(out.Column(4))
	if err != nil {
		t.Fatal(err)
	}
	errs := out.Column(5).(*array.String)
	sums, msgs := make([]float32, rec.NumRows()), make([]string, rec.NumRows())
	for r := range sums {
		sums[r] = emb[2*r]
		if errs.IsValid(r) {
			msgs[r] = errs.Value(r)
		}
	}
	return sums, msgs
}

// A latency-bound adaptation sends each batch at a side of its own as a
// variable-length list that keeps the variant's shape and lists the sides;
// the model call resizes each row back up to the shape (ResizeArea)
// and sees, for full-side rows, exactly what the fixed-size path gives it.
// Without a link after it (the model on the same worker) it keeps the
// variant's side, and it counts the rows sent at each side.
func TestAdaptVariableSides(t *testing.T) {
	for _, enc := range []string{"float32", "uint8"} {
		t.Run(enc, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec := imageRecord(t, mem, 3, 1)
			defer rec.Release()
			src, _, err := TensorValues(rec.Column(1))
			if err != nil {
				t.Fatal(err)
			}
			fixed, err := NewAdapt(rec.Schema(), 1, 4, 2, enc)
			if err != nil {
				t.Fatal(err)
			}
			a, err := fixed.WithSides([]int{2, 1}, 100*time.Millisecond, time.Millisecond, 0)
			if err != nil {
				t.Fatal(err)
			}
			f := a.Schema().Field(1)
			if _, ok := f.Type.(*arrow.ListType); !ok {
				t.Fatalf("adapted column is %s, want a list", f.Type)
			}
			if shape, u8, ok := VariableShape(f); !ok || FormatDims(shape) != "1,2,2" || u8 != (enc == "uint8") {
				t.Fatalf("variable shape %v uint8 %v ok %v, want 1,2,2", shape, u8, ok)
			}

			// Through a dataflow with nothing but a local sink after it:
			// every row at the variant's side.
			var got builtin.Captured
			defer got.Release()
			g := &dataflow.Graph{Query: "sides"}
			rec.Retain()
			s := g.AddOperator(dataflow.OperatorSpec{Name: "src", Outputs: 1, Workers: []int{0},
				New: func(dataflow.Instance) (dataflow.Operator, error) {
					return builtin.NewSliceSource([]dataflow.Batch{{Epoch: 1, Record: rec}}), nil
				}})
			op := g.AddOperator(dataflow.OperatorSpec{Name: "adapt", Inputs: 1, Outputs: 1, Workers: []int{0},
				New: func(dataflow.Instance) (dataflow.Operator, error) { return a, nil }})
			sink := g.AddOperator(dataflow.OperatorSpec{Name: "sink", Inputs: 1, Workers: []int{0},
				New: func(dataflow.Instance) (dataflow.Operator, error) { return builtin.NewCapture(&got, 0), nil }})
			g.Connect(s, 0, op, 0)
			g.Connect(op, 0, sink, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := dataflow.Run(ctx, g, dataflow.Config{Allocator: mem}); err != nil {
				t.Fatal(err)
			}
			bs := got.Batches()
			if len(bs) != 1 || !bs[0].Record.Schema().Equal(a.Schema()) {
				t.Fatalf("batches %v, want one of the adapted schema", bs)
			}
			if c := a.Counters(); c["side_2"] != 2 || c["side_1"] != 0 {
				t.Errorf("counters %v, want the 2 non-null rows at side 2", c)
			}
			if s := FormatSides(a.Counters()); s != "2:2 1:0" {
				t.Errorf("FormatSides %q", s)
			}
			full := bs[0].Record.Column(1).(*array.List)
			if full.NullN() != 1 || !full.IsNull(1) || listLen(full, 0) != 4 || listLen(full, 2) != 4 {
				t.Errorf("full-side rows: lengths %d %d, nulls %d", listLen(full, 0), listLen(full, 2), full.NullN())
			}
			// The fixed-size path's record, for the same rows.
			fixedCol, err := fixed.adapt(mem, rec.Column(1))
			if err != nil {
				t.Fatal(err)
			}
			if c := fixed.Counters(); len(c) != 1 || c["side_2"] != 2 {
				t.Errorf("the fixed adaptation's counters %v, want its 2 non-null rows at side 2", c)
			}
			fixedRec := array.NewRecord(fixed.Schema(), []arrow.Array{rec.Column(0), fixedCol}, rec.NumRows())
			fixedCol.Release()
			defer fixedRec.Release()
			want, _ := embSums(t, mem, fixedRec)
			sums, msgs := embSums(t, mem, bs[0].Record)
			for _, r := range []int{0, 2} {
				if sums[r] != want[r] || msgs[r] != "" {
					t.Errorf("full side, row %d: the model saw %v (%q), the fixed path %v", r, sums[r], msgs[r], want[r])
				}
			}
			if msgs[1] == "" {
				t.Errorf("the null row was not marked failed")
			}

			// At side 1 each row is one pixel (the area mean of its 16),
			// which the model call spreads back over its 2x2.
			small, err := a.adaptVariable(mem, rec.Column(1), 1)
			if err != nil {
				t.Fatal(err)
			}
			smallRec := array.NewRecord(a.Schema(), []arrow.Array{rec.Column(0), small}, rec.NumRows())
			small.Release()
			defer smallRec.Release()
			if l := small.(*array.List); listLen(l, 0) != 1 || listLen(l, 1) != 0 || listLen(l, 2) != 1 {
				t.Errorf("side-1 lengths %d %d %d, want 1 0 1", listLen(l, 0), listLen(l, 1), listLen(l, 2))
			}
			sums, msgs = embSums(t, mem, smallRec)
			tol := 1e-5
			if enc == "uint8" {
				tol = 4.0 / 510
			}
			for _, r := range []int{0, 2} {
				var mean float64
				for _, v := range src[r*16 : (r+1)*16] {
					mean += float64(v) / 16
				}
				if d := math.Abs(float64(sums[r]) - 4*mean); d > tol || msgs[r] != "" {
					t.Errorf("side 1, row %d: the model saw pixels summing to %v (%q), want %v", r, sums[r], msgs[r], 4*mean)
				}
			}
			if c := a.Counters(); c["side_1"] != 2 {
				t.Errorf("counters %v, want 2 rows at side 1", c)
			}
		})
	}
}

// A row of a variable-side column that is no square image up to the
// shape's side fails alone; the others are answered.
func TestModelMarksBadVariableRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f := VariableField(TensorField("image", []int64{1, 2, 2}), []int{2, 1})
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, f}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	lb := b.Field(1).(*array.ListBuilder)
	vb := lb.ValueBuilder().(*array.Float32Builder)
	for r, row := range [][]float32{{1, 2, 3, 4}, {1, 2, 3}, {0.5}, {1, 1, 1, 1, 1, 1, 1, 1, 1}} {
		ids.Append(int64(r))
		lb.Append(true)
		vb.AppendValues(row, nil)
	}
	rec := b.NewRecord()
	defer rec.Release()
	sums, msgs := embSums(t, mem, rec)
	if sums[0] != 10 || msgs[0] != "" || sums[2] != 2 || msgs[2] != "" {
		t.Errorf("good rows: sums %v errors %q", sums, msgs)
	}
	if msgs[1] == "" || msgs[3] == "" {
		t.Errorf("rows of 3 and 9 values were answered: %q", msgs)
	}
}

// Bilinear upscaling samples between pixel centres, edges clamped: a
// horizontal ramp 0..1 over two pixels becomes 0, .25, .75, 1.
func TestResizeBilinear(t *testing.T) {
	dst := make([]float32, 16)
	ResizeBilinear(dst, []float32{0, 1, 0, 1}, 2, 4)
	for y := 0; y < 4; y++ {
		for x, want := range []float32{0, 0.25, 0.75, 1} {
			if got := dst[y*4+x]; math.Abs(float64(got-want)) > 1e-6 {
				t.Errorf("(%d,%d) = %v, want %v", x, y, got, want)
			}
		}
	}
}

// The side of a batch follows the link's measured distribution: the
// smallest before the link has shown what it carries, the largest that arrives in time and whose
// stream the link carries at a bandwidth the link's next message gets with
// the batch's probability (by how its samples moved from where the link is
// now, and a message overdue on it), the smallest when none does, and none
// (0: dropped before the link) when even the smallest would arrive after
// its deadline.
func TestSidePlanPick(t *testing.T) {
	sides := []int{28, 20, 14}
	// link is a link that has carried bps for 60 samples.
	link := func(bps float64) dataflow.LinkState {
		st := dataflow.LinkState{BandwidthBps: bps, LastBps: bps, Acks: 10, SRTT: 2 * time.Millisecond}
		for range 60 {
			st.Samples = append(st.Samples, bps)
		}
		return st
	}
	// sampled is a link whose latest samples are n at kbit kbit/s after
	// one at slow kbit/s.
	sampled := func(kbit, slow float64, n int) dataflow.LinkState {
		st := link(kbit * 1e3 / 8)
		st.Samples = append(st.Samples, slow*1e3/8)
		for i := 0; i < n; i++ {
			st.Samples = append(st.Samples, kbit*1e3/8)
		}
		return st
	}
	// series is a link whose samples are runs of (kbit/s, count) pairs,
	// oldest first; its mean is the last run's.
	series := func(runs ...float64) dataflow.LinkState {
		st := link(runs[len(runs)-2] * 1e3 / 8)
		st.Samples = nil
		for i := 0; i+1 < len(runs); i += 2 {
			for range int(runs[i+1]) {
				st.Samples = append(st.Samples, runs[i]*1e3/8)
			}
		}
		return st
	}
	// resident is st with the receiver's residence measures: one of slow,
	// then n of usual.
	resident := func(st dataflow.LinkState, slow, usual time.Duration, n int) dataflow.LinkState {
		st.Residence = append(st.Residence, slow)
		for range n {
			st.Residence = append(st.Residence, usual)
		}
		return st
	}
	// A sender that lags 10 ms from choice to link (the cases were worked
	// out with it; a case below has none).
	base := sidePlan{Rows: 1, Overhead: 600, SLO: 100 * time.Millisecond, BatchesPerSec: 15, RowsPerSec: 15, Attain: 0.98, Lag: 10 * time.Millisecond}
	// waited is a link at kbit kbit/s and a batch that waited age for it.
	waited := func(kbit float64, age time.Duration) func(sidePlan) sidePlan {
		return func(p sidePlan) sidePlan {
			p.State, p.Age = link(kbit*1e3/8), age
			return p
		}
	}
	on := func(st dataflow.LinkState) func(sidePlan) sidePlan {
		return func(p sidePlan) sidePlan { p.State = st; return p }
	}
	for _, c := range []struct {
		name string
		p    func(sidePlan) sidePlan
		want int
	}{
		{"no ack yet", on(dataflow.LinkState{}), 14},
		{"acks, too few samples to hold any side", on(series(1500, 20)), 14},
		{"1500 kbit/s", on(link(1500e3 / 8)), 28},
		{"600 kbit/s: 28 in time, its stream 75% of the link", on(link(600e3 / 8)), 28},
		{"400 kbit/s: 28's stream more than the link, in time, the next can go smaller", on(link(400e3 / 8)), 28},
		{"30 batches/s at 300 kbit/s, 1100 bytes ahead: 20 in time, the next batch at 14 not", func(p sidePlan) sidePlan {
			p.State, p.BatchesPerSec, p.RowsPerSec = link(300e3/8), 30, 30
			p.State.UnackedBytes = 1100
			return p
		}, 14},
		{"the same, 1100 bytes ahead, from a sender that lags nothing: 20 and the next at 14 in time", func(p sidePlan) sidePlan {
			p.State, p.BatchesPerSec, p.RowsPerSec, p.Lag = link(300e3/8), 30, 30, 0
			p.State.UnackedBytes = 1100
			return p
		}, 20},
		{"30 batches/s at 300 kbit/s, 900 bytes ahead: 20 and the next at 14 in time", func(p sidePlan) sidePlan {
			p.State, p.BatchesPerSec, p.RowsPerSec = link(300e3/8), 30, 30
			p.State.UnackedBytes = 900
			return p
		}, 20},
		{"1500 kbit/s, the latest sample 250: a fall counts at once", on(sampled(1500, 250, 0)), 20},
		{"back at 1500 after a long slow spell at 250: 28 waits for evidence, 20 held all along", on(series(250, 60, 1500, 3)), 20},
		{"back at 1500 after a slow spell, 1500 long held before it", on(series(1500, 200, 250, 60, 1500, 3)), 28},
		{"the same with 1500 held half as long: the one fall, 60 messages long, costs 28 itself and one behind it, 3/123", on(series(1500, 120, 250, 60, 1500, 3)), 20},
		{"fades: 2 falls to 250 in 120 good samples, 3/121 over 2%", on(series(1500, 60, 250, 5, 1500, 60, 250, 5, 1500, 5)), 20},
		{"one fall to 250 in 150 good samples, 2/151 at P98", on(series(1500, 100, 250, 5, 1500, 55)), 28},
		{"a one-message fall to 100 in 260 good samples: 28 there misses itself and 3 behind it, and the next may too, 8/259; 20 itself and 1, 4/259", on(series(1500, 200, 100, 1, 1500, 59)), 20},
		{"the same fall in 160 good samples: 20's 4/159 over 2%", on(series(1500, 100, 100, 1, 1500, 59)), 14},
		{"a five-message fall to 100, under the smallest stream: 20 misses itself and 4 behind it, 6/155", on(series(1500, 100, 100, 5, 1500, 55)), 14},
		{"one fall to 250 in 150 good samples, 2/151 over P99's 1%", func(p sidePlan) sidePlan {
			p.State, p.Attain = series(1500, 100, 250, 5, 1500, 55), 0.99
			return p
		}, 20},
		{"good samples, the last message (1 KB, 40 ms on the link) overdue at 200 kbit/s: a fall no sample has shown, nothing says how deep, 14", func(p sidePlan) sidePlan {
			p.State = series(1500, 60)
			p.State.OverdueBps, p.State.UnackedBytes, p.Crossing = 200e3/8, 1000, 40*time.Millisecond
			return p
		}, 14},
		{"the same on a link that once fell to 180 for a message: the one fall that deep (1 of 160 transitions, rarer than 1-p) ended at 180, under 20's need behind the overdue message: 14 (FallUnderWay; 20 before it)", func(p sidePlan) sidePlan {
			p.State = series(1500, 100, 180, 1, 1500, 60)
			p.State.OverdueBps, p.State.UnackedBytes, p.Crossing = 200e3/8, 1000, 40*time.Millisecond
			return p
		}, 14},
		{"the same message 62 ms on the link, overdue at 130 kbit/s, under 20's need: 14", func(p sidePlan) sidePlan {
			p.State = series(1500, 60)
			p.State.OverdueBps, p.State.UnackedBytes, p.Crossing = 130e3/8, 1000, 62*time.Millisecond
			return p
		}, 14},
		{"a message of 2.2 KB 88 ms on the link, overdue at 200 kbit/s, on the link that once fell to 180: crossed at that bound, but the one fall that deep ended under 20's need, 14 (20 before FallUnderWay)", func(p sidePlan) sidePlan {
			p.State = series(1500, 100, 180, 1, 1500, 60)
			p.State.OverdueBps, p.State.UnackedBytes, p.Crossing = 200e3/8, 2200, 88*time.Millisecond
			return p
		}, 14},
		{"a 28 frame 66 ms on a link last sampled at 670 kbit/s, overdue at 455: one transition of 119 fell that far (1300 to 670), rarer than 1-p, and scaled to 670 it ends at 345, under 28's need (386 behind the frame), over 20's (306): 20, not a second 28 behind it (steps-2411)", func(p sidePlan) sidePlan {
			p.State = series(1300, 20, 670, 100)
			p.State.OverdueBps, p.State.UnackedBytes, p.Crossing = 455e3/8, 3736, 66*time.Millisecond
			return p
		}, 20},
		{"the same overdue ratio on a link whose every other transition fell that far (700 to 600): a fall every Risk at p reads already, 28", func(p sidePlan) sidePlan {
			var runs []float64
			for range 60 {
				runs = append(runs, 700, 1, 600, 1)
			}
			p.State = series(runs...)
			p.State.OverdueBps, p.State.UnackedBytes, p.Crossing = 540e3/8, 3736, 55*time.Millisecond
			return p
		}, 28},
		{"a batch that waited 50 ms behind a message overdue at 100 kbit/s: dropped", func(p sidePlan) sidePlan {
			p.State, p.Age = series(1500, 60), 50*time.Millisecond
			p.State.OverdueBps, p.State.UnackedBytes = 100e3/8, 2200
			return p
		}, 0},
		{"the same on a link of 20 samples, too few to hold any side: dropped all the same (the batch's fate needs no tail)", func(p sidePlan) sidePlan {
			p.State, p.Age = series(1500, 20), 50*time.Millisecond
			p.State.OverdueBps, p.State.UnackedBytes = 100e3/8, 2200
			return p
		}, 0},
		{"the same batch with nothing overdue: in time at 28", func(p sidePlan) sidePlan {
			p.State, p.Age = series(1500, 60), 50*time.Millisecond
			p.State.UnackedBytes = 2200
			return p
		}, 28},
		{"a 700 kbit/s sample in 1500: 28 still fits", on(sampled(1500, 700, 10)), 28},
		{"small frames' acks: 300 kbit/s, the link's own rate 1200", func(p sidePlan) sidePlan {
			p.State = link(1200e3 / 8) // the samples are the transfer rate's
			p.State.BandwidthBps, p.State.LastBps = 300e3/8, 300e3/8
			p.State.TransferBps, p.State.LastTransferBps, p.State.BaseRTT = 1200e3/8, 1200e3/8, 15*time.Millisecond
			return p
		}, 28},
		{"130 kbit/s: no stream fits, in time at 14", on(link(130e3 / 8)), 14},
		{"100 kbit/s: 14 with its framing takes 111 ms, past the SLO: dropped", on(link(100e3 / 8)), 0},
		{"130 kbit/s: 14 with its framing takes 85 ms, in time: sent", on(link(130e3 / 8)), 14},
		{"a batch that waited 95 ms: dropped", waited(900, 95*time.Millisecond), 0},
		{"a batch that waited 80 ms, 250 kbit/s: dropped", waited(250, 80*time.Millisecond), 0},
		{"a batch that waited 80 ms, 900 kbit/s, 8 KB just put ahead (71 ms of the link): dropped", func(p sidePlan) sidePlan {
			p.State, p.Age = link(900e3/8), 80*time.Millisecond
			p.State.UnackedBytes = 8000
			return p
		}, 0},
		{"the same, the 8 KB 70 ms on the link: almost across, sent", func(p sidePlan) sidePlan {
			p.State, p.Age, p.Crossing = link(900e3/8), 80*time.Millisecond, 70*time.Millisecond
			p.State.UnackedBytes = 8000
			return p
		}, 14},
		// The stream's allowance: a side the evidence does not hold yet,
		// one step above the largest it holds, when the link carries it
		// now and the allowance covers its risk.
		{"20 samples at 1500 kbit/s, an allowance of one batch: 28, the largest the link carries now, none of its samples under 28's need", func(p sidePlan) sidePlan {
			p.State, p.Allowance = series(1500, 20), 1
			return p
		}, 28},
		{"20 samples, one of them at 300 kbit/s (under 28's need, over 20's), an allowance of two: 20, one step above what holds", func(p sidePlan) sidePlan {
			p.State, p.Allowance = series(1500, 10, 300, 1, 1500, 10), 2
			return p
		}, 20},
		{"no ack yet, an allowance of one batch: 28, the first batch a bet on the largest", func(p sidePlan) sidePlan {
			p.State, p.Allowance = dataflow.LinkState{}, 1
			return p
		}, 28},
		{"a fall under 28's need that cost two batches (itself and one behind), an allowance of one batch: 20, the allowance must cover what 28 loses", func(p sidePlan) sidePlan {
			p.State, p.Allowance = series(1500, 40, 250, 3, 1500, 40), 1
			return p
		}, 20},
		{"the same, an allowance of three batches: 28", func(p sidePlan) sidePlan {
			p.State, p.Allowance = series(1500, 40, 250, 3, 1500, 40), 3
			return p
		}, 28},
		{"the same, the allowance spent: 14", func(p sidePlan) sidePlan {
			p.State, p.Allowance = series(1500, 20), 0.02
			return p
		}, 14},
		{"20 held after a slow spell, 28 not yet, an allowance of one: 28", func(p sidePlan) sidePlan {
			p.State, p.Allowance = series(250, 60, 1500, 3), 1
			return p
		}, 28},
		{"20 samples, the latest at 250 kbit/s, an allowance of one: 20, which the link carries now", func(p sidePlan) sidePlan {
			p.State, p.Allowance = series(1500, 19, 250, 1), 1
			return p
		}, 20},
		{"20 samples, the latest at 150 kbit/s, under 20's need: 14, the allowance is not spent on a side the link does not carry now", func(p sidePlan) sidePlan {
			p.State, p.Allowance = series(1500, 19, 150, 1), 1
			return p
		}, 14},
		// A stream in debt (more missed than 1-p of its batches) holds a
		// side only with the probability that pays the debt back within
		// the next EvidenceSamples(p) batches: 0.02 - 0.5/49 at P98.
		{"120 samples at 1500 kbit/s, half a batch in debt: 28 holds at P99", func(p sidePlan) sidePlan {
			p.State, p.Debt = series(1500, 120), 0.5
			return p
		}, 28},
		{"60 samples, half a batch in debt: too few for P99, 14", func(p sidePlan) sidePlan {
			p.State, p.Debt = series(1500, 60), 0.5
			return p
		}, 14},
		{"120 samples, a batch in debt: nothing but the smallest until it is paid back", func(p sidePlan) sidePlan {
			p.State, p.Debt = series(1500, 120), 1
			return p
		}, 14},
		{"60 samples, out of debt: 28", func(p sidePlan) sidePlan {
			p.State, p.Debt = series(1500, 60), -1
			return p
		}, 28},
		{"a batch that waited 80 ms, 250 kbit/s, nothing acked since the last drop: sent, for a new ack", func(p sidePlan) sidePlan {
			p = waited(250, 80*time.Millisecond)(p)
			p.Stale = true
			return p
		}, 14},
		{"a batch past its deadline, nothing acked since the last drop: dropped all the same", func(p sidePlan) sidePlan {
			p = waited(900, 100*time.Millisecond)(p)
			p.Stale = true
			return p
		}, 0},
		{"no rows: nothing to drop", func(p sidePlan) sidePlan {
			p.State, p.Age, p.Rows = link(900e3/8), 95*time.Millisecond, 0
			return p
		}, 14},
		{"a batch that waited 45 ms", waited(900, 45*time.Millisecond), 28},
		{"a batch that waited 60 ms", waited(900, 60*time.Millisecond), 20},
		{"900 kbit/s, the receiver keeping batches 60 ms: 28 no longer in time", on(resident(link(900e3/8), 60*time.Millisecond, 5*time.Millisecond, 48)), 20},
		{"the 60 ms residence 49 back: aged out at P98", on(resident(link(900e3/8), 60*time.Millisecond, 5*time.Millisecond, 49)), 28},
		{"a residence under the profiled compute: the profile's", func(p sidePlan) sidePlan {
			p.State, p.Compute = resident(link(900e3/8), time.Millisecond, time.Millisecond, 10), 60*time.Millisecond
			return p
		}, 20},
		{"a batch that waited 80 ms, the receiver slow: still sent, the drop is by the profile", func(p sidePlan) sidePlan {
			p.State, p.Age = resident(link(900e3/8), 60*time.Millisecond, 60*time.Millisecond, 10), 80*time.Millisecond
			return p
		}, 14},
		{"bytes on the wire ahead", func(p sidePlan) sidePlan {
			p.State = link(900e3 / 8)
			p.State.UnackedBytes = 8000
			return p
		}, 14},
	} {
		if got, _ := c.p(base).pick(sides, 1, 4); got != c.want {
			t.Errorf("%s: side %d, want %d", c.name, got, c.want)
		}
	}
}

// A drop is never read off the evidence of the drop before it: a link
// whose first frames measured it slow (163 kbit/s where it carried 1,451,
// under load) and a stream whose batches wait a while would otherwise drop
// every batch for good, as a dropped batch brings no ack. After a drop the
// next batch goes at the smallest side, and once its ack is in, a batch
// may be dropped again.
func TestSideChooserProbesAfterADrop(t *testing.T) {
	c := newSideChooser([]int{28, 20, 14}, 1, 4, 100*time.Millisecond, time.Millisecond)
	slow := dataflow.LinkState{BandwidthBps: 163e3 / 8, LastBps: 163e3 / 8, Acks: 2, SRTT: 120 * time.Millisecond}
	for range 60 {
		slow.Samples = append(slow.Samples, 163e3/8)
	}
	now := time.Now().UnixNano()
	batch := func(acks uint64) int {
		now += int64(66 * time.Millisecond)
		st := slow
		st.Acks = acks
		return c.decide(now, now-int64(30*time.Millisecond), []dataflow.LinkState{st}, 1)
	}
	var got []int
	for _, acks := range []uint64{2, 2, 2, 3, 3} {
		got = append(got, batch(acks))
	}
	if want := []int{0, 14, 14, 0, 14}; !slices.Equal(got, want) {
		t.Fatalf("sides %v, want %v (drop, then sent until an ack is new evidence)", got, want)
	}
}

func listLen(l *array.List, i int) int {
	start, end := l.ValueOffsets(i)
	return int(end - start)
}

// TestSideChooserLagIsItsLatestTail: the lag kept free of a batch's budget
// is the longest of the chooser's latest EvidenceSamples measures, so one
// slow hand-off counts for as long as the attainment's evidence reaches
// and no longer.
func TestSideChooserLagIsItsLatestTail(t *testing.T) {
	c := newSideChooser([]int{28, 20, 14}, 1, 4, 100*time.Millisecond, 5*time.Millisecond)
	if got := c.lagTail(); got != 0 {
		t.Fatalf("no measure yet: lag %v, want 0", got)
	}
	n := dataflow.EvidenceSamples(c.attain)
	c.lagged(30 * time.Millisecond)
	for range n - 1 {
		c.lagged(time.Millisecond)
	}
	if got := c.lagTail(); got != 30*time.Millisecond {
		t.Fatalf("a slow hand-off %d measures ago: lag %v, want 30ms", n-1, got)
	}
	c.lagged(2 * time.Millisecond)
	if got := c.lagTail(); got != 2*time.Millisecond {
		t.Fatalf("the slow hand-off %d measures ago: lag %v, want 2ms", n, got)
	}
	if len(c.lags) != n {
		t.Fatalf("kept %d measures, want %d", len(c.lags), n)
	}
}

// The stream's allowance pays for a side the evidence does not hold yet
// while the batches known to have missed, and what each bet still on the
// link loses, stay within 1-p of the stream; besides it each side above the
// smallest has one learning bet until a bet on it is lost. A batch whose
// ack came in time costs nothing, one acknowledged after its deadline is a
// miss: the lost bet on 28 leaves 20's own bet, and with that lost too the
// allowance is spent until the stream has decided enough to cover the two
// misses and a next bet's loss.
func TestSideChooserAllowanceCountsLateAcks(t *testing.T) {
	c, st, t0, decide := chooserOn1500()
	var got []int
	got = append(got, decide(0))
	// The first batch acknowledged 50 ms after its capture: in time.
	st.Batches, st.Acks, st.LastAck = 21, 21, t0.Add(50*time.Millisecond)
	got = append(got, decide(66))
	// The second acknowledged 120 ms after its capture: missed.
	st.Batches, st.Acks, st.LastAck = 22, 22, t0.Add(186*time.Millisecond)
	got = append(got, decide(200))
	// The third 130 ms after: missed too.
	st.Batches, st.Acks, st.LastAck = 23, 23, t0.Add(330*time.Millisecond)
	got = append(got, decide(340))
	if want := []int{28, 28, 20, 14}; !slices.Equal(got, want) || c.missed != 2 {
		t.Fatalf("sides %v, %v missed; want %v and 2 (28 until a bet on it is late, then 20's own bet)", got, c.missed, want)
	}
	// The two misses and a bet's loss (a whole batch) fit once the stream
	// has decided 3/(1-p) batches: 150 at P98.
	for k := 1; k <= 160; k++ {
		st.Batches, st.Acks, st.LastAck = 23+uint64(k), 23+uint64(k), t0.Add(time.Duration(340+66*k-60)*time.Millisecond)
		got = append(got, decide(340+66*k))
	}
	if got[len(got)-1] != 28 || slices.Index(got[4:], 28) < 140 {
		t.Fatalf("sides after the misses %v: want 14 until about 150 batches are decided, then 28", got[4:])
	}
}

// A bet that misses behind a batch that missed waited on that one: its
// side keeps its learning bet. The bet on 28 meets a fall and the bet on 20
// sent behind it, on 20's own learning bet, misses in its queue; the next
// batch still has 20's bet, where charging 20 with the loss sent the
// smallest until the evidence held 20 (flapping.csv, queued sender: 40
// batches at 14, 0.06 points under static-middle).
func TestSideChooserBetBehindAMissKeepsItsSide(t *testing.T) {
	c, st, t0, decide := chooserOn1500()
	var got []int
	got = append(got, decide(0))
	// The 28 still on the link: 28's bet is in flight, 20 bets its own.
	st.Batches = 21
	got = append(got, decide(66))
	// Both acknowledged late, the second behind the first.
	st.Batches, st.Acks, st.LastAck = 22, 22, t0.Add(300*time.Millisecond)
	got = append(got, decide(310))
	if want := []int{28, 20, 20}; !slices.Equal(got, want) || c.missed != 2 {
		t.Fatalf("sides %v, %v missed; want %v and 2 (20's bet lost in the queue behind 28's, not on its side)", got, c.missed, want)
	}
}

// chooserOn1500 is a chooser of sides 28, 20 and 14 for a 100 ms SLO on a
// link of 20 samples at 1500 kbit/s (too few to hold any side: every side
// above 14 is a bet), its link's state for the test to move, the time 0
// of decide, which decides a batch of one row at ms.
func chooserOn1500() (*sideChooser, *dataflow.LinkState, time.Time, func(ms int) int) {
	c := newSideChooser([]int{28, 20, 14}, 1, 4, 100*time.Millisecond, time.Millisecond)
	st := &dataflow.LinkState{BandwidthBps: 1500e3 / 8, LastBps: 1500e3 / 8, Acks: 20, Batches: 20, SRTT: 20 * time.Millisecond}
	for range 20 {
		st.Samples = append(st.Samples, 1500e3/8)
	}
	t0 := time.Unix(1000, 0)
	at := func(ms int) int64 { return t0.Add(time.Duration(ms) * time.Millisecond).UnixNano() }
	return c, st, t0, func(ms int) int { return c.decide(at(ms), at(ms), []dataflow.LinkState{*st}, 1) }
}
