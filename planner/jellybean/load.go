package jellybean

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Percentiles of execution profiles a directory may hold.
var Percentiles = []string{"p50", "p75", "p90"}

// Load reads a prototype input directory. Every malformed line of every file is
// reported (errors joined), each as file:line:col. Optional files: the
// execution_profile_pXX.csv variants (at least one execution profile must be
// there), sources_workers_link.csv, config.yaml.
func Load(dir string) (*Prototype, error) {
	pr := &Prototype{Dir: dir, Profiles: map[string][]ExecRow{}}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(pr.readCSV("logical_graph.csv", true, 2, func(f []field) error {
		pr.Graph = append(pr.Graph, GraphEdge{From: f[0].s, To: f[1].s})
		return nil
	}))
	add(pr.readCSV("input_injection_rates.csv", true, 2, func(f []field) error {
		v, err := f[1].num()
		pr.Rates = append(pr.Rates, Rate{Source: f[0].s, RPS: v})
		return err
	}))
	add(pr.readCSV("throughput_normalization_ratios.csv", false, 3, func(f []field) error {
		v, err := f[2].num()
		pr.Ratios = append(pr.Ratios, Ratio{From: f[0].s, To: f[1].s, Ratio: v})
		return err
	}))
	add(pr.readCSV("message_sizes.csv", true, 5, func(f []field) error {
		v, err := f[4].num()
		pr.MessageSizes = append(pr.MessageSizes, MessageSize{From: f[0].s, To: f[1].s, FromVariant: f[2].s, ToVariant: f[3].s, KB: v})
		return err
	}))
	add(pr.readCSV("workers_specs.csv", true, 2, func(f []field) error {
		v, err := f[1].num()
		pr.Workers = append(pr.Workers, WorkerSpec{Name: f[0].s, Price: v})
		return err
	}))
	add(pr.readCSV("workers_workers_link.csv", false, 3, func(f []field) error {
		v, err := f[2].num()
		pr.WorkerLinks = append(pr.WorkerLinks, Link{From: f[0].s, To: f[1].s, Multiplier: v})
		return err
	}))
	add(pr.readCSV("sources_workers_link.csv", false, 3, func(f []field) error {
		v, err := f[2].num()
		pr.SourceLinks = append(pr.SourceLinks, Link{From: f[0].s, To: f[1].s, Multiplier: v})
		return err
	}))
	for _, pc := range append([]string{""}, Percentiles...) {
		name := "execution_profile.csv"
		if pc != "" {
			name = "execution_profile_" + pc + ".csv"
		}
		var rows []ExecRow
		err := pr.readCSV(name, false, 4, func(f []field) error {
			v, err := f[3].num()
			rows = append(rows, ExecRow{Operator: f[0].s, Worker: f[1].s, Variant: f[2].s, LatencyMs: v})
			return err
		})
		add(err)
		if rows != nil {
			pr.Profiles[pc] = rows
		}
	}
	if len(pr.Profiles) == 0 && len(errs) == 0 {
		add(formatErr(filepath.Join(dir, "execution_profile.csv"), 1, 1, "no execution profile (execution_profile{,_p50,_p75,_p90}.csv)"))
	}
	add(readJSON(filepath.Join(dir, "accuracy_requirement.json"), &pr.Requirement))
	add(readJSON(filepath.Join(dir, "accuracy_profiles.json"), &pr.Accuracy))
	add(readJSON(filepath.Join(dir, "workers_partition.json"), &pr.Partition))
	add(pr.readConfig())
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return pr, nil
}

// field is one CSV cell with its position.
type field struct {
	s         string
	file      string
	line, col int
}

func (f field) num() (float64, error) {
	v, err := strconv.ParseFloat(f.s, 64)
	if err != nil {
		return 0, formatErr(f.file, f.line, f.col, "%q is not a number", f.s)
	}
	return v, nil
}

// readCSV reads a comma-separated file without quoting (the prototype writes
// none) with exactly n fields per line. A line ending in a stray comma (as line 5
// of the published P75 profiles does) is accepted and recorded in Notes. Missing
// optional files are skipped.
func (pr *Prototype) readCSV(name string, required bool, n int, row func([]field) error) error {
	path := filepath.Join(pr.Dir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !required {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		var fs []field
		col := 1
		for _, cell := range strings.Split(line, ",") {
			lead := len(cell) - len(strings.TrimLeft(cell, " \t"))
			fs = append(fs, field{s: strings.TrimSpace(cell), file: path, line: i + 1, col: col + lead})
			col += len(cell) + 1
		}
		if len(fs) == n+1 && fs[n].s == "" {
			pr.Notes = append(pr.Notes, fmt.Sprintf("%s:%d:%d: stray trailing comma ignored", path, i+1, fs[n].col-1))
			fs = fs[:n]
		}
		if len(fs) != n {
			errs = append(errs, formatErr(path, i+1, 1, "%d fields, want %d", len(fs), n))
			continue
		}
		bad := false
		for _, f := range fs {
			if f.s == "" {
				errs = append(errs, formatErr(path, f.line, f.col, "empty field"))
				bad = true
			}
		}
		if bad {
			continue
		}
		if err := row(fs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// readJSON decodes a file strictly, reporting syntax and type errors at line:col.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	line, col := 1, 1
	if off >= 0 {
		line, col = lineCol(data, int(off))
	}
	return formatErr(path, line, col, "%v", err)
}

func lineCol(data []byte, off int) (int, int) {
	off = min(off, len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// readConfig reads config.yaml; a missing file means the prototype's defaults.
func (pr *Prototype) readConfig() error {
	pr.Config = Config{LatencyOverestimateRatio: 1, CommCostScaling: 0.1, BestK: 10, MaxNumAssignOrders: 10, BestKAssignments: 10}
	path := filepath.Join(pr.Dir, "config.yaml")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return formatErr(path, 1, 1, "%v", err)
	}
	pr.Config.Raw = map[string]map[string]any{}
	if len(root.Content) == 0 {
		return nil
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return formatErr(path, top.Line, top.Column, "want a mapping of sections")
	}
	var errs []error
	for i := 0; i+1 < len(top.Content); i += 2 {
		sec, body := top.Content[i].Value, top.Content[i+1]
		if body.Kind != yaml.MappingNode {
			errs = append(errs, formatErr(path, body.Line, body.Column, "section %s: want a mapping", sec))
			continue
		}
		pr.Config.Raw[sec] = map[string]any{}
		for j := 0; j+1 < len(body.Content); j += 2 {
			k, v := body.Content[j].Value, body.Content[j+1]
			pr.Config.Raw[sec][k] = v.Value
			num := func() float64 {
				x, err := strconv.ParseFloat(v.Value, 64)
				if err != nil {
					errs = append(errs, formatErr(path, v.Line, v.Column, "%s.%s: %q is not a number", sec, k, v.Value))
				}
				return x
			}
			switch sec + "." + k {
			case "INPUT.LATENCY_OVERESTIMATE_RATIO":
				pr.Config.LatencyOverestimateRatio = num()
			case "INPUT.COMM_COST_SCALING_FACTOR":
				pr.Config.CommCostScaling = num()
			case "BEAM_SEARCH.BEST_K":
				pr.Config.BestK = int(num())
			case "WORKER_ASSIGNMENT.MAX_NUM_ASSIGN_ORDERS":
				pr.Config.MaxNumAssignOrders = int(num())
			case "WORKER_ASSIGNMENT.BEST_K_ASSIGNMENTS":
				pr.Config.BestKAssignments = int(num())
			}
		}
	}
	return errors.Join(errs...)
}
