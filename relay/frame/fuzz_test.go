package frame

import (
	"bytes"
	"errors"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// seedFrames are valid frames of every kind; the fuzzer mutates them.
func seedFrames(t testing.TB) [][]byte {
	rec := testRecord(memory.DefaultAllocator, 5)
	defer rec.Release()
	ipcBody := encodeRecordBytes(t, rec)
	// The schema followed by a hand-written record batch message, the form
	// every batch after a link's first takes.
	var fast bytes.Buffer
	fast.Write(ipcBody[:schemaEnd(ipcBody)])
	if !appendRecordFast(&fast, rec, &fastWriter{}) {
		t.Fatalf("fast path refused the seed record")
	}
	fastBody := fast.Bytes()
	return [][]byte{
		Append(nil, Header{Kind: KindData, Flags: FlagSchema, Query: "q1", Seq: 2, Chunks: 1, Total: uint64(len(fastBody))}, fastBody),
		Append(nil, Header{Kind: KindData, Flags: FlagSchema, Query: "q1", Edge: 1, Sender: 2, Receiver: 3, Epoch: 4, Seq: 1, Chunks: 1, Total: uint64(len(ipcBody))}, ipcBody),
		Append(nil, Header{Kind: KindData, Query: "q1", Seq: 2, Chunks: 1, Total: uint64(len(ipcBody) - schemaEnd(ipcBody))}, ipcBody[schemaEnd(ipcBody):]),
		Append(nil, Header{Kind: KindData, Query: "q1", Seq: 2, Chunk: 1, Chunks: 3, Total: uint64(3 * 4)}, ipcBody[:4]),
		Append(nil, Header{Kind: KindProgress, Query: "q1", Epoch: 5, Seq: 3, Chunks: 1}, nil),
		Append(nil, Header{Kind: KindEnd, Query: "q1", Seq: 4, Chunks: 1}, nil),
		Append(nil, Header{Kind: KindHello, Query: "q1", Chunks: 1}, nil),
		Append(nil, Header{Kind: KindCredit, Query: "q1", Chunks: 1, Total: CreditLen}, EncodeCredit(nil, Credit{Messages: 64, Bytes: 1 << 21})),
		Append(nil, Header{Kind: KindClose, Chunks: 1}, nil),
		Append(nil, Header{Kind: KindAck, Seq: 3, Chunks: 1}, nil),
		Append(nil, Header{Kind: KindResend, Seq: 4, Chunks: 1}, nil),
	}
}

// FuzzDecodeFrame feeds arbitrary bytes through everything a receiver does with
// a frame off the network. It must return errors, never panic or allocate
// without bound, and whatever it accepts must re-encode to the same bytes.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range seedFrames(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if re := Append(nil, h, body); !bytes.Equal(re, b) {
			t.Fatalf("accepted frame does not re-encode to its bytes")
		}
		if hq, _, err := DecodeQuery(b, "q1"); err != nil || hq != h {
			t.Fatalf("DecodeQuery differs from Decode: %+v, %v", hq, err)
		}
		switch h.Kind {
		case KindCredit:
			if _, err := DecodeCredit(body); err != nil {
				t.Fatalf("credit body accepted by Decode but not DecodeCredit: %v", err)
			}
		case KindData:
			if h.Chunks != 1 {
				return
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			dec := NewDecoder(mem)
			rec, err := dec.Decode(body, h.Flags&FlagSchema != 0)
			dec.Close()
			if err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("record error %v does not wrap ErrMalformed", err)
				}
				return
			}
			// Whatever was accepted must be readable end to end: a forged
			// length or offset must fail above, not here. (Layouts other than
			// the plain ones, such as dictionaries and unions, are Arrow's
			// reader's alone and it does not validate them; see zerocopy.go.)
			if schemaZeroCopyable(rec.Schema()) {
				for _, col := range rec.Columns() {
					_ = col.String()
				}
			}
			rec.Release()
			if n := mem.CurrentAlloc(); n != 0 {
				t.Fatalf("decoded record leaked %d bytes", n)
			}
		}
	})
}
