// Package jellybean reads the input format of the JellyBean prototype's optimizer
// (a directory of CSV, JSON and YAML files, as in
// shared/reference/jellybean-vqa-medium) into a raw Prototype value, and lowers it
// into an optimize.Problem with the prototype's cost model preserved, so totals
// are comparable with the prototype's.
//
// It owns only the file format; it imports planner/optimize and nothing else of
// tierflow. The raw Prototype stays exported so that `tierflow import jellybean`
// can write catalog and infrastructure YAML from it.
package jellybean

import (
	"errors"
	"fmt"
)

// ErrFormat is the kind of every error about a malformed prototype file; the
// message names file:line:col.
var ErrFormat = errors.New("jellybean format")

// Prototype is the raw content of a prototype input directory.
type Prototype struct {
	Dir string
	// Graph: logical_graph.csv, edges in file order.
	Graph []GraphEdge
	// Rates: input_injection_rates.csv, requests per second per source.
	Rates []Rate
	// Ratios: throughput_normalization_ratios.csv.
	Ratios []Ratio
	// Requirement: accuracy_requirement.json.
	Requirement Requirement
	// Accuracy: accuracy_profiles.json.
	Accuracy AccuracyProfiles
	// Profiles: execution profiles by percentile ("p50", "p75", "p90"; "" is
	// the unsuffixed execution_profile.csv, which the prototype uses as P75).
	Profiles map[string][]ExecRow
	// MessageSizes: message_sizes.csv.
	MessageSizes []MessageSize
	// Workers: workers_specs.csv.
	Workers []WorkerSpec
	// Partition: workers_partition.json, tiers lowest first.
	Partition [][]string
	// WorkerLinks, SourceLinks: workers_workers_link.csv, sources_workers_link.csv.
	WorkerLinks []Link
	SourceLinks []Link
	// Config: config.yaml.
	Config Config
	// Notes records what the loader had to tolerate (e.g. a stray trailing
	// comma), with file:line:col.
	Notes []string
}

// GraphEdge is one logical_graph.csv row.
type GraphEdge struct{ From, To string }

// Rate is one input_injection_rates.csv row.
type Rate struct {
	Source string
	RPS    float64
}

// Ratio is one throughput_normalization_ratios.csv row: items into To per item
// out of From.
type Ratio struct {
	From, To string
	Ratio    float64
}

// Requirement is accuracy_requirement.json.
type Requirement struct {
	Sink      string  `json:"sink"`
	Threshold float64 `json:"threshold"`
}

// AccuracyProfiles is accuracy_profiles.json.
type AccuracyProfiles struct {
	Sink      string            `json:"sink"`
	Operators []AccuracyOp      `json:"operators"`
	EndToEnd  *EndToEndProfiles `json:"end_to_end"`
}

// AccuracyOp is one operator of accuracy_profiles.json.
type AccuracyOp struct {
	Name     string                      `json:"name"`
	Inputs   []string                    `json:"inputs"`
	Cost     map[string]float64          `json:"cost"`
	Accuracy map[string][]AccuracySample `json:"accuracy"`
}

// AccuracySample maps input accuracies to an output accuracy.
type AccuracySample struct {
	InputAccuracies []float64 `json:"input_accuracies"`
	OutputAccuracy  float64   `json:"output_accuracy"`
}

// EndToEndProfiles is the measured accuracy of each variant combination.
type EndToEndProfiles struct {
	Operators []string `json:"operators"`
	Accuracy  []struct {
		Variants []string `json:"variants"`
		Accuracy float64  `json:"accuracy"`
	} `json:"accuracy"`
}

// ExecRow is one execution profile row: latency in ms per item.
type ExecRow struct {
	Operator, Worker, Variant string
	LatencyMs                 float64
}

// MessageSize is one message_sizes.csv row; "default" matches any variant.
type MessageSize struct {
	From, To, FromVariant, ToVariant string
	KB                               float64
}

// WorkerSpec is one workers_specs.csv row.
type WorkerSpec struct {
	Name  string
	Price float64
}

// Link is a link cost multiplier row.
type Link struct {
	From, To   string
	Multiplier float64
}

// Config holds the knobs of config.yaml the optimizer uses; Raw keeps the rest.
type Config struct {
	LatencyOverestimateRatio float64
	CommCostScaling          float64
	BestK                    int
	MaxNumAssignOrders       int
	BestKAssignments         int
	Raw                      map[string]map[string]any
}

func formatErr(file string, line, col int, format string, args ...any) error {
	return fmt.Errorf("%s:%d:%d: %w: "+format, append([]any{file, line, col, ErrFormat}, args...)...)
}
