package pixels

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/dataflow"
	"github.com/tierflow/tierflow/internal/testenv"
	"github.com/tierflow/tierflow/operators/pixels/pixelstest"
)

// An encoded image's header states its size, and Go's decoders allocate
// the pixels it states before reading them: a PNG of a few dozen bytes
// stating 30000x30000 had image.Decode allocate 3.6 GB to find its data
// short. Now an image past MaxRawPixels is not an image (nothing
// allocated); one within it is charged to the query's budget before it is
// decoded, and refused past the budget (nothing allocated); one that fits
// is decoded, and its charge goes back when released. Through the frame
// cache too.
func TestAnImageIsSizedByItsHeaderBeforeItIsDecoded(t *testing.T) {
	huge := pixelstest.StatingPNG(t, 30000, 30000)
	var err error
	if got := testenv.Allocated(func() { _, err = Decode(huge) }); got > 1<<20 {
		t.Errorf("a %d-byte PNG stating 30000x30000: allocated %s", len(huge), dataflow.Bytes(int64(got)))
	}
	if !errors.Is(err, ErrImage) {
		t.Errorf("a PNG stating 30000x30000: %v, want ErrImage", err)
	}

	big := pixelstest.StatingPNG(t, 8000, 8000) // 256 MB of RGBA, within MaxRawPixels
	for _, decode := range []func([]byte, memory.Allocator) (image.Image, func(), error){DecodeWithin, (&Frames{MaxFrames: 4, MaxBytes: 1 << 30}).DecodeWithin} {
		budget := dataflow.NewMemory("query q", 16<<20, nil)
		mem := budget.Allocator(memory.NewGoAllocator())
		var release func()
		if got := testenv.Allocated(func() { _, release, err = decode(big, mem) }); got > 1<<20 {
			t.Errorf("a PNG stating 8000x8000 in a 16 MiB budget: allocated %s", dataflow.Bytes(int64(got)))
		}
		release()
		var le *dataflow.LimitError
		if !errors.As(err, &le) {
			t.Errorf("a PNG stating 8000x8000 in a 16 MiB budget: %v, want the budget's refusal", err)
		}

		var small bytes.Buffer
		if err := png.Encode(&small, image.NewNRGBA(image.Rect(0, 0, 64, 32))); err != nil {
			t.Fatal(err)
		}
		img, release, err := decode(small.Bytes(), mem)
		if err != nil || img.Bounds().Dx() != 64 || img.Bounds().Dy() != 32 {
			t.Fatalf("a 64x32 PNG in a 16 MiB budget: %v, %v", img, err)
		}
		if used := budget.Used(); used < 64*32*4 {
			t.Errorf("a decoded 64x32 RGBA image: the budget holds %d bytes, want its pixels", used)
		}
		release()
		if used := budget.Used(); used != 0 {
			t.Errorf("released, the budget still holds %d bytes", used)
		}
		budget.Close()
	}
}
