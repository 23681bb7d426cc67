package nexmark

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Partition splits each of dir's three event files into parts files
// (bid-0.csv ... under dir/parts-N, beside a copy of side_input.csv), row i to file i mod parts, as
// nexmark-flink's datagen source of parallelism N has split k make every
// N-th event. Each part keeps the events' time order, so it is a stream
// partition with a watermark of its own (a FROM FILE glob, operators/exec).
// Existing parts are reused. It returns the folder.
func Partition(dir string, parts int) (string, error) {
	out := filepath.Join(dir, fmt.Sprintf("parts-%d", parts))
	if _, err := os.Stat(filepath.Join(out, fmt.Sprintf("bid-%d.csv", parts-1))); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	// q13's side input is a table, read whole.
	side, err := os.ReadFile(filepath.Join(dir, "side_input.csv"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(out, "side_input.csv"), side, 0o644); err != nil {
		return "", err
	}
	// The bid parts last: their last file says the folder is complete.
	for _, name := range []string{"person", "auction", "bid"} {
		if err := split(filepath.Join(dir, name+".csv"), filepath.Join(out, name), parts); err != nil {
			return "", err
		}
	}
	return out, nil
}

// split writes in's rows round-robin into prefix-k.csv, each with in's
// header.
func split(in, prefix string, parts int) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	header, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("%s: no header: %w", in, err)
	}
	ws := make([]*bufio.Writer, parts)
	fs := make([]*os.File, parts)
	for k := range ws {
		if fs[k], err = os.Create(fmt.Sprintf("%s-%d.csv", prefix, k)); err != nil {
			return err
		}
		defer fs[k].Close()
		ws[k] = bufio.NewWriterSize(fs[k], 1<<20)
		ws[k].WriteString(header)
	}
	for i := 0; ; i++ {
		line, err := r.ReadString('\n')
		if line != "" {
			if !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			ws[i%parts].WriteString(line)
		}
		if err != nil {
			break
		}
	}
	for k := range ws {
		if err := ws[k].Flush(); err != nil {
			return err
		}
		if err := fs[k].Close(); err != nil {
			return err
		}
	}
	return nil
}
