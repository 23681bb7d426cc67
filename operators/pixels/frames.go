package pixels

import (
	"bytes"
	"image"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow/memory"
)

// Frames remembers the frames this process decoded last, by their encoded
// bytes, so that a frame is decoded once on a worker however many
// operators there read it. In a two-stage vision query the detector's
// image step decodes a frame to find its boxes, and crop_image, fused with
// the detector's stage on the same worker, cuts every box out of that same
// frame moments later: without this the frame would be decoded twice (a
// 640x360 PNG costs about 2 ms, as much as the rest of the engine's work
// on it).
//
// A hit is decided by the bytes themselves (length, then bytes.Equal), not
// by a hash or a row id, so it can never hand out another frame's pixels.
// The cache holds at most MaxFrames frames and MaxBytes of decoded pixels
// and the encoded copies they are matched by, oldest out first; raw pixels (a crop) are never cached, as reading them
// costs one copy. The decoded images are shared and must not be written.
type Frames struct {
	MaxFrames int
	MaxBytes  int64

	mu    sync.Mutex
	slots []frame // oldest first
	bytes int64

	hits, misses atomic.Int64
}

type frame struct {
	src  []byte // a copy: the caller's buffer may be reused
	img  image.Image
	size int64
}

// Shared is the process's cache: every image step and crop_image of every
// query on this worker reads through it. 16 frames cover the frames
// between a detector's decode and its boxes' crops (its batch, the queue
// before the crop's projection); 64 MiB bounds it for 4K frames.
var Shared = &Frames{MaxFrames: 16, MaxBytes: 64 << 20}

// Decode is Decode(b), from the cache when b was decoded lately.
func (f *Frames) Decode(b []byte) (image.Image, error) {
	img, release, err := f.DecodeWithin(b, nil)
	release()
	return img, err
}

// DecodeWithin is DecodeWithin(b, mem), from the cache when b was decoded
// lately: a frame the cache holds is the process's, bounded by MaxBytes,
// and is charged to no query.
func (f *Frames) DecodeWithin(b []byte, mem memory.Allocator) (image.Image, func(), error) {
	if IsRaw(b) {
		return DecodeWithin(b, mem)
	}
	f.mu.Lock()
	for i := len(f.slots) - 1; i >= 0; i-- {
		if s := &f.slots[i]; len(s.src) == len(b) && bytes.Equal(s.src, b) {
			img := s.img
			f.mu.Unlock()
			f.hits.Add(1)
			return img, func() {}, nil
		}
	}
	f.mu.Unlock()
	f.misses.Add(1)
	img, release, err := DecodeWithin(b, mem)
	if err != nil {
		return nil, release, err
	}
	// What a slot holds is its pixels and the copy of its encoded bytes
	// it is matched by: a noisy 4K PNG is tens of MB, and counting the
	// pixels alone let 16 of them hold several times MaxBytes.
	size := decodedSize(img) + int64(len(b))
	if size > f.MaxBytes || f.MaxFrames <= 0 {
		return img, release, nil
	}
	src := bytes.Clone(b)
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.slots) > 0 && (len(f.slots) >= f.MaxFrames || f.bytes+size > f.MaxBytes) {
		f.bytes -= f.slots[0].size
		f.slots[0] = frame{}
		f.slots = f.slots[1:]
	}
	f.slots = append(f.slots, frame{src: src, img: img, size: size})
	f.bytes += size
	return img, release, nil
}

// Reset forgets every frame (a benchmark that reads the same frames again
// must decode them again, as a camera's new frames are).
func (f *Frames) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slots, f.bytes = nil, 0
}

// Stats are the cache's hits and misses so far.
func (f *Frames) Stats() (hits, misses int64) { return f.hits.Load(), f.misses.Load() }

// decodedSize is about what a decoded image holds: its pixel buffers.
func decodedSize(img image.Image) int64 {
	switch m := img.(type) {
	case *image.RGBA:
		return int64(len(m.Pix))
	case *image.NRGBA:
		return int64(len(m.Pix))
	case *image.Gray:
		return int64(len(m.Pix))
	case *image.Paletted:
		return int64(len(m.Pix))
	case *image.YCbCr:
		return int64(len(m.Y) + len(m.Cb) + len(m.Cr))
	}
	r := img.Bounds()
	return 8 * int64(r.Dx()) * int64(r.Dy())
}
