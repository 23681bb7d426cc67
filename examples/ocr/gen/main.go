// Command gen renders examples/ocr/data: scenes of text the project draws
// itself (the Go fonts on gradients and shapes, known strings), as an Arrow
// stream file and the labels beside it:
//
//	go run ./examples/ocr/gen
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/tierflow/tierflow/examples/ocr"
)

func main() {
	out := flag.String("out", "examples/ocr/data/scenes.arrow", "stream file to write")
	labels := flag.String("labels", "examples/ocr/data/labels.json", "labels file to write")
	n := flag.Int("n", 24, "scenes")
	seed := flag.Uint64("seed", ocr.Seed, "random seed")
	batch := flag.Int("batch", 4, "rows per record")
	measure := flag.Bool("measure", false, "also measure the variants (accuracy on the labels, latency by batch) and write the catalog")
	catalog := flag.String("catalog", "examples/ocr/catalog.yaml", "catalog to write with -measure")
	models := flag.String("models", ocr.CacheDir, "the setup cache's OCR models, for -measure")
	threads := flag.Int("threads", 1, "intra-op threads of the measured sessions")
	iters := flag.Int("iters", 20, "timed calls per variant and batch size (rounds of one call each; p90 of 5 calls would be the slowest)")
	flag.Parse()
	scenes, err := ocr.Generate(*seed, *n)
	if err != nil {
		log.Fatal(err)
	}
	if err := ocr.WriteStream(*out, *labels, scenes, *batch); err != nil {
		log.Fatal(err)
	}
	lines, bytes := 0, 0
	for _, s := range scenes {
		lines += len(s.Lines)
		bytes += len(s.Bytes)
	}
	fmt.Printf("%s: %d scenes (%dx%d, PNG and JPEG), %d lines of text, %d KiB of images\n", *out, len(scenes), ocr.Width, ocr.Height, lines, bytes/1024)
	if !*measure {
		return
	}
	m, err := ocr.Measure(*models, scenes, *threads, *iters, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*catalog, []byte(m.CatalogYAML("x2")), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: written from the measurements\n", *catalog)
}
