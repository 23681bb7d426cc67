package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// scanAll reads every record of data, byte by byte or a line at a time
// where it can, as "line: fields" or "line: error".
func scanAll(data []byte, byteWise bool) []string {
	s := NewCSVScanner(bytes.NewReader(data))
	s.byteWise = byteWise
	var out []string
	for {
		fields, line, err := s.Read()
		if errors.Is(err, io.EOF) {
			return append(out, fmt.Sprintf("end at line %d, offset %d", s.line, s.off))
		}
		if err != nil {
			out = append(out, fmt.Sprintf("%d: %v", line, err))
			var se *CSVSyntaxError
			if !errors.As(err, &se) {
				return out
			}
			continue
		}
		out = append(out, fmt.Sprintf("%d: %#v", line, fields))
	}
}

var csvScanSeeds = []string{
	"a,b,c\n1,2,3\n", "a,b\r\n1,2\r\n", "a\n\n\nb\n", "x,\"q,1\",y\nz,w,v\n", "1,2\n3,4", "\n", "", "\r\n\r\n",
	"a,\"b\"\"c\",d\n", "a,b\"c\n1,2\n", "\"open\n1,2\n", "a,\"x\"y,b\n1\n", "a\rb,c\n", ",,\n,\n", "é,\xff\n",
	"\"multi\nline\",2\n3,4\n", "a,b,c\r", "1,2\n\"\"\n",
}

// TestCSVScannerLineAtATime: reading whole lines without quotes from the
// buffer gives every record, line, error and offset the byte at a time
// path gives, also with lines longer than the buffer.
func TestCSVScannerLineAtATime(t *testing.T) {
	long := strings.Repeat("x", 70_000) + ",1\nshort,2\n"
	for _, in := range append(csvScanSeeds, long) {
		if a, b := scanAll([]byte(in), false), scanAll([]byte(in), true); !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: a line at a time %q, byte by byte %q", in, a, b)
		}
	}
}

// FuzzCSVScanner: on any input, both paths agree.
func FuzzCSVScanner(f *testing.F) {
	for _, s := range csvScanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if a, b := scanAll(data, false), scanAll(data, true); !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: a line at a time %q, byte by byte %q", data, a, b)
		}
	})
}

// BenchmarkCSVScanner reads 100,000 Nexmark-like bid lines byte by byte
// and a line at a time, in this process; lines/bytes is the ratio of their
// times.
func BenchmarkCSVScanner(b *testing.B) {
	var sb strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&sb, "%d,%d,%d,Google,https://www.nexmark.com/abcde/fghij/item.htm?query=1,2026-01-01 00:00:%02d.%03d,qwertyui\n", 1000+i%977, 2000+i%911, 100+i*37, i%60, i%1000)
	}
	data := []byte(sb.String())
	var took [2]float64
	for k, name := range []string{"bytes", "lines"} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				s := NewCSVScanner(bytes.NewReader(data))
				s.byteWise = k == 0
				n := 0
				for {
					_, _, err := s.Read()
					if err != nil {
						break
					}
					n++
				}
				if n != 100_000 {
					b.Fatal(n)
				}
			}
			took[k] = float64(b.Elapsed()) / float64(b.N)
		})
	}
	if took[0] > 0 {
		b.Logf("lines/bytes time: %.3f", took[1]/took[0])
	}
}

// BenchmarkCSVMessages scans 10,000 one-line messages (a CSV subject's
// messages), a scanner per message, once through a reader that hides its
// length (the scanner takes its whole 64 KiB buffer) and once over the
// bytes themselves (the buffer is the message's size); sized/full is the
// ratio of their times.
func BenchmarkCSVMessages(b *testing.B) {
	msgs := make([][]byte, 10_000)
	for i := range msgs {
		msgs[i] = fmt.Appendf(nil, "%d,%d,%d,Google,https://www.nexmark.com/abcde/fghij/item.htm?query=1,2026-01-01 00:00:%02d.%03d,qwertyui", 1000+i%977, 2000+i%911, 100+i*37, i%60, i%1000)
	}
	var took [2]float64
	for k, name := range []string{"full", "sized"} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				for _, m := range msgs {
					var r io.Reader = bytes.NewReader(m)
					if k == 0 {
						r = struct{ io.Reader }{r}
					}
					s := NewCSVScanner(r)
					if _, _, err := s.Read(); err != nil {
						b.Fatal(err)
					}
					if _, _, err := s.Read(); err != io.EOF {
						b.Fatalf("after the line: %v", err)
					}
				}
			}
			took[k] = float64(b.Elapsed()) / float64(b.N)
		})
	}
	if took[0] > 0 {
		b.Logf("sized/full time: %.3f", took[1]/took[0])
	}
}
