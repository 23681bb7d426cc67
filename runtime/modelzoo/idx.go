package modelzoo

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrBadIDX is wrapped by every error about a malformed IDX file.
var ErrBadIDX = errors.New("modelzoo: bad IDX file")

// IDX is an unsigned-byte IDX array (the MNIST format): Dims[0] items of the
// remaining dims each.
type IDX struct {
	Dims []int
	Data []uint8
}

// ReadIDXFile reads an IDX file, gunzipping it when its name ends in .gz.
func ReadIDXFile(path string) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	x, err := ReadIDX(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, nil
}

// ReadIDX reads an unsigned-byte IDX array.
func ReadIDX(r io.Reader) (*IDX, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrBadIDX, err)
	}
	if hdr[0] != 0 || hdr[1] != 0 || hdr[2] != 0x08 {
		return nil, fmt.Errorf("%w: magic %x, want 0000 08 (unsigned byte)", ErrBadIDX, hdr[:3])
	}
	nd := int(hdr[3])
	if nd < 1 || nd > 4 {
		return nil, fmt.Errorf("%w: %d dimensions", ErrBadIDX, nd)
	}
	x := &IDX{Dims: make([]int, nd)}
	size := 1
	for i := range x.Dims {
		var d uint32
		if err := binary.Read(r, binary.BigEndian, &d); err != nil {
			return nil, fmt.Errorf("%w: dimension %d: %v", ErrBadIDX, i, err)
		}
		if d > 1<<26 {
			return nil, fmt.Errorf("%w: dimension %d is %d", ErrBadIDX, i, d)
		}
		x.Dims[i] = int(d)
		size *= int(d)
	}
	if size > 1<<30 {
		return nil, fmt.Errorf("%w: %d values", ErrBadIDX, size)
	}
	x.Data = make([]uint8, size)
	if _, err := io.ReadFull(r, x.Data); err != nil {
		return nil, fmt.Errorf("%w: data: %v", ErrBadIDX, err)
	}
	return x, nil
}

// WriteIDXFile writes x, gzipped when the name ends in .gz.
func WriteIDXFile(path string, x *IDX) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw, _ = gzip.NewWriterLevel(f, gzip.BestCompression)
		w = zw
	}
	hdr := []byte{0, 0, 0x08, byte(len(x.Dims))}
	for _, d := range x.Dims {
		hdr = binary.BigEndian.AppendUint32(hdr, uint32(d))
	}
	_, err = w.Write(hdr)
	if err == nil {
		_, err = w.Write(x.Data)
	}
	if zw != nil {
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Items is Dims[0]; ItemSize the product of the other dims.
func (x *IDX) Items() int { return x.Dims[0] }

// ItemSize is the number of values per item.
func (x *IDX) ItemSize() int {
	n := 1
	for _, d := range x.Dims[1:] {
		n *= d
	}
	return n
}

// Head returns the first n items (sharing the data).
func (x *IDX) Head(n int) *IDX {
	n = min(n, x.Items())
	dims := append([]int{n}, x.Dims[1:]...)
	return &IDX{Dims: dims, Data: x.Data[:n*x.ItemSize()]}
}

// Floats scales the bytes to [0, 1] float32, the input the zoo's models expect.
func (x *IDX) Floats() []float32 {
	out := make([]float32, len(x.Data))
	for i, b := range x.Data {
		out[i] = float32(b) / 255
	}
	return out
}
