// Command gen rebuilds examples/vad/data/speech.arrow from the LibriVox
// readings of the Debian package pocketsphinx-testdata:
//
//	apt-get install -y pocketsphinx-testdata
//	go run ./examples/vad/gen
package main

import (
	"flag"
	"fmt"
	"log"
	"path/filepath"

	"github.com/tierflow/tierflow/examples/vad"
)

func main() {
	src := flag.String("data", vad.DefaultSource, "directory with the LibriVox WAV clips")
	out := flag.String("out", "examples/vad/data/speech.arrow", "stream file to write")
	batch := flag.Int("batch", 64, "rows per record")
	flag.Parse()
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
