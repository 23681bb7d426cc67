// Command gen writes the models and stream files of examples/vqa from
// examples/vqa-live's (package vqa says how). It is deterministic:
//
//	go run ./examples/vqa/gen
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tierflow/tierflow/examples/vqa"
)

func main() {
	root := flag.String("root", ".", "repository root (where examples/vqa-live is)")
	out := flag.String("out", "examples/vqa", "example directory to write models/ and data/ under")
	flag.Parse()
	if err := vqa.Generate(*root, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
