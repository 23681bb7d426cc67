// Command gen writes the models and stream files of examples/vqa-live from
// files the repository already holds: images from examples/fashion's stream,
// speech from examples/vad's (LibriVox), image feature extractors cut from
// examples/fashion's trained classifiers, and seeded random speech and VQA
// models. It is deterministic and runs in about a second:
//
//	go run ./examples/vqa-live/gen
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	vqalive "github.com/tierflow/tierflow/examples/vqa-live"
)

func main() {
	root := flag.String("root", ".", "repository root (where examples/fashion and examples/vad are)")
	out := flag.String("out", "examples/vqa-live", "example directory to write models/ and data/ under")
	flag.Parse()
	vs, err := vqalive.Generate(*root, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, v := range vs {
		st, err := os.Stat(filepath.Join(*out, "models", v.File))
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Printf("%-20s %-15s %8d bytes (stands for %s)\n", v.Model, v.Name, st.Size(), v.Prototype)
	}
	for _, f := range []string{"images.arrow", "speech.arrow"} {
		st, err := os.Stat(filepath.Join(*out, "data", f))
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Printf("data/%-15s %8d bytes, %d rows\n", f, st.Size(), vqalive.Rows)
	}
}
