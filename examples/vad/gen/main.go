// Command gen rebuilds examples/vad/data/speech.arrow from the LibriVox
// readings of the Debian package pocketsphinx-testdata:
//
//	apt-get install -y pocketsphinx-testdata
//	go run ./examples/vad/gen
//
// When only the file's encoding changes (vad.WriteStream), -recode rewrites
// the checked-in file from its own frames, without the recordings, and
// checks that every record reads back equal to the old file's:
//
//	go run ./examples/vad/gen -recode
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/examples/vad"
)

func main() {
	src := flag.String("data", vad.DefaultSource, "directory with the LibriVox WAV clips")
	out := flag.String("out", "examples/vad/data/speech.arrow", "stream file to write")
	batch := flag.Int("batch", 64, "rows per record")
	recode := flag.Bool("recode", false, "rewrite -out from its own frames (no recordings needed) and check the records are unchanged")
	flag.Parse()
	if *recode {
		if err := recodeStream(*out, *batch); err != nil {
			log.Fatal(err)
		}
		st, err := os.Stat(*out)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: rewritten, %d bytes, every record equal to the old file's\n", *out, st.Size())
		return
	}
	var clips [][]float32
	for _, c := range vad.Clips {
		x, err := vad.ReadWAV(filepath.Join(*src, c))
		if err != nil {
			log.Fatal(err)
		}
		clips = append(clips, x)
	}
	f := vad.Cut(clips)
	if err := f.WriteStream(*out, *batch); err != nil {
		log.Fatal(err)
	}
	speech, gaps := 0, 0
	for i := range f.Rows() {
		if f.Speech[i] {
			speech++
		}
		if f.Gap[i] {
			gaps++
		}
	}
	fmt.Printf("%s: %d frames (%.1f s), %d labelled speech (%.3f), %d inserted silence\n",
		*out, f.Rows(), float64(f.Rows())*vad.FrameInterval.Seconds(), speech, float64(speech)/float64(f.Rows()), gaps)
}

// recodeStream writes path's frames again with vad.WriteStream (beside it,
// then renamed over it) once the new file's records equal the old one's.
func recodeStream(path string, batch int) error {
	f, err := vad.FramesFromStream(path)
	if err != nil {
		return err
	}
	tmp := path + ".recode"
	defer os.Remove(tmp)
	if err := f.WriteStream(tmp, batch); err != nil {
		return err
	}
	mem := memory.NewGoAllocator()
	old, err := vad.ReadStream(mem, path)
	if err != nil {
		return err
	}
	recoded, err := vad.ReadStream(mem, tmp)
	if err != nil {
		return err
	}
	if len(old) != len(recoded) {
		return fmt.Errorf("%s: %d records, the rewritten file %d", path, len(old), len(recoded))
	}
	for i := range old {
		if !array.RecordEqual(old[i], recoded[i]) {
			return fmt.Errorf("%s: record %d differs in the rewritten file", path, i)
		}
	}
	return os.Rename(tmp, path)
}
