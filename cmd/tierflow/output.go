package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/sinks"
)

// Result formats of run and submit, as DuckDB's CLI has them: table, csv,
// json (one array), jsonl (a JSON object a line), and parquet (to a file).
const resultFormats = "table, csv, json, jsonl, parquet or discard"

// resultFormat checks --format, or takes it from --output's extension
// (.csv, .json, .jsonl or .ndjson, .parquet; a table otherwise, but not
// under a binary format's extension such as .arrow, a spreadsheet's or a
// database's).
func resultFormat(format, output string) (string, error) {
	if format == "" && output != "" {
		switch strings.ToLower(filepath.Ext(output)) {
		case ".csv":
			format = "csv"
		case ".json":
			format = "json"
		case ".jsonl", ".ndjson":
			format = "jsonl"
		case ".parquet":
			format = "parquet"
		case ".arrow", ".arrows", ".ipc", ".feather", ".avro", ".orc", ".xlsx", ".xls", ".ods", ".duckdb", ".db", ".sqlite":
			// A table in text under a binary format's name would be
			// read back as a broken file: refuse before anything runs.
			return "", fmt.Errorf("--output %s: tierflow writes no %s files; want .csv, .json, .jsonl, .parquet, or --format table for text", output, filepath.Ext(output))
		}
	}
	switch format {
	case "", "table", "csv", "json", "jsonl":
	case "discard":
		// Rows are counted and dropped (Flink's blackhole): what a query
		// costs without its output's encoding.
	case "parquet":
		if output == "" {
			return "", fmt.Errorf("--format parquet needs --output FILE")
		}
	default:
		return "", fmt.Errorf("unknown --format %q: want %s", format, resultFormats)
	}
	return format, nil
}

// resultWriter writes one query's results in format to w.
func resultWriter(format string, w io.Writer) (sinks.Writer, error) {
	if format == "json" {
		return sinks.NewJSONArray(w), nil
	}
	return sinks.New(format, w)
}

// resultQueries counts the script's SELECTs: the statements whose rows go
// to --output (an INSERT's go to its sink). A script that does not parse
// counts 0: the run reports it.
func resultQueries(path, src string) int {
	script, err := lang.Parse(path, src)
	if err != nil {
		return 0
	}
	n := 0
	for _, st := range script.Statements {
		if _, ok := st.(*lang.Query); ok {
			n++
		}
	}
	return n
}

// outputFiles are the files --output FILE stands for when a script has n
// SELECTs: FILE itself for one, else one file per query with its number
// before the extension (out-1.csv, out-2.csv, ...), so that results of
// different shapes never mix in one file (a CSV with two headers, a
// Parquet file of one schema).
func outputFiles(path string, n int) []string {
	if n <= 1 {
		return []string{path}
	}
	ext := filepath.Ext(path)
	stem := strings.TrimSuffix(path, ext)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d%s", stem, i+1, ext)
	}
	return out
}

// resultOutputs makes the writers of a run's SELECTs, in order: on stdout,
// or into --output's files (outputFiles), all created before anything runs
// (a path that cannot be written fails first).
type resultOutputs struct {
	format string
	stdout io.Writer
	files  []*os.File
	next   int
}

// openOutputs creates --output's files for a script with n SELECTs and
// says on log where the results go when there are several.
func openOutputs(format, output string, n int, stdout, log io.Writer) (*resultOutputs, error) {
	r := &resultOutputs{format: format, stdout: stdout}
	if output == "" {
		return r, nil
	}
	paths := outputFiles(output, n)
	for _, p := range paths {
		f, err := os.Create(p)
		if err != nil {
			r.close()
			return nil, badInput(err) // --output names a file that cannot be made
		}
		r.files = append(r.files, f)
	}
	if len(paths) > 1 {
		fmt.Fprintf(log, "-- %d queries: one file each, %s\n", len(paths), strings.Join(paths, ", "))
	}
	return r, nil
}

func (r *resultOutputs) newOutput() (sinks.Writer, error) {
	if len(r.files) == 0 {
		return resultWriter(r.format, r.stdout)
	}
	if r.next >= len(r.files) {
		return nil, fmt.Errorf("--output: more queries than the %d the script was counted to have", len(r.files))
	}
	f := r.files[r.next]
	r.next++
	return resultWriter(r.format, f)
}

func (r *resultOutputs) close() {
	for _, f := range r.files {
		f.Close()
	}
}
