package session

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/optimize"
	"github.com/tierflow/tierflow/planner/rewrite"
)

// ErrInvalid marks a SET, SHOW or DESCRIBE the session cannot answer: the
// user's input is wrong (the CLI exits 2 on it).
var ErrInvalid = errors.New("invalid session statement")

// invalid is a message about the user's input that reads as written and
// matches ErrInvalid.
type invalid struct{ msg string }

func (e invalid) Error() string { return e.msg }
func (e invalid) Unwrap() error { return ErrInvalid }

func invalidf(format string, args ...any) error {
	return invalid{fmt.Sprintf(format, args...)}
}

// Settings are what SET has changed so far: the planner's options (EXPLAIN
// and planning use them) and the executor's settings as written (exec.*,
// applied to each query by Exec.Apply).
type Settings struct {
	Planner planner.Options
	values  map[string]string
}

// New is a session's settings before any SET: the planner's defaults.
func New() *Settings {
	return &Settings{Planner: planner.Options{Strategy: planner.DefaultStrategy}, values: map[string]string{}}
}

// Names lists what SET changes, for help and completion.
func Names() []string {
	return []string{"exec.batch_size", "exec.max_delay", "exec.on_error", "exec.replay", "exec.state_ttl", "planner.accuracy", "planner.adapt_inputs", "planner.beam_ms", "planner.beam_wa", "planner.beam_width",
		"planner.profile", "planner.seed", "planner.strategy", "planner.throughput",
		"planner.time_budget", "planner.topo_orders"}
}

// Values copies every SET value as written, by setting name.
func (s *Settings) Values() map[string]string {
	out := make(map[string]string, len(s.values))
	for k, v := range s.values {
		out[k] = v
	}
	return out
}

// Set applies one SET statement; a bad name or value changes nothing and is
// an error at the statement's position.
func (s *Settings) Set(st *lang.Set) error {
	val, err := literal(st.Value)
	if err != nil {
		return invalidf("%s: %v", bind.Pos(st.Pos), err)
	}
	key := strings.ToLower(st.Key)
	if !slices.Contains(Names(), key) {
		// Blamed at the name, with the one meant: SET's position said
		// only which statement.
		msg := fmt.Sprintf("%s: SET %s: unknown setting", bind.Pos(st.KeyPos), key)
		if sug := lang.Suggest(key, Names()); sug != "" {
			return invalidf("%s (did you mean %q?)", msg, sug)
		}
		return invalidf("%s (want one of %s)", msg, strings.Join(Names(), ", "))
	}
	return s.set(key, val, bind.Pos(st.Pos).String())
}

// FromValues rebuilds settings from what Values gave (a query's SETs sent
// to a coordinator, which plans it with them).
func FromValues(values map[string]string) (*Settings, error) {
	s := New()
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := s.set(k, values[k], "settings"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// PlannerValues are the planner.* entries of values.
func PlannerValues(values map[string]string) map[string]string {
	var out map[string]string
	for k, v := range values {
		if strings.HasPrefix(k, "planner.") {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func (s *Settings) set(key, val, at string) error {
	bad := func(format string, args ...any) error {
		return invalidf("%s: SET %s: %s", at, key, fmt.Sprintf(format, args...))
	}
	num := func() (float64, error) {
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return 0, bad("want a number, got %q", val)
		}
		return f, nil
	}
	count := func() (int, error) {
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 {
			return 0, bad("want a positive integer, got %q", val)
		}
		return n, nil
	}
	o := &s.Planner
	switch key {
	case "planner.strategy":
		reg := o.Registry
		if reg == nil {
			reg = optimize.DefaultRegistry()
		}
		if _, err := reg.Lookup(strings.ToLower(val)); err != nil {
			return bad("unknown strategy %q (want one of %s)", val, strings.Join(reg.Names(), ", "))
		}
		o.Strategy = strings.ToLower(val)
	case "planner.adapt_inputs":
		switch m := strings.ToLower(val); m {
		case rewrite.AdaptResize, rewrite.AdaptUint8, rewrite.AdaptOff:
			o.AdaptInputs, val = m, m
		default:
			return bad("want resize, uint8 or off, got %q", val)
		}
	case "planner.profile":
		p, err := planner.ParsePercentile(val)
		if err != nil {
			return bad("%v", err)
		}
		o.Percentile = p
	case "planner.accuracy":
		f, err := num()
		if err != nil {
			return err
		}
		o.Accuracy = &f
	case "planner.throughput":
		f, err := num()
		if err != nil {
			return err
		}
		o.Throughput = f
	case "planner.seed":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return bad("want an integer, got %q", val)
		}
		o.Optimize.Seed = n
	case "planner.beam_width":
		n, err := count()
		if err != nil {
			return err
		}
		o.Optimize.BeamModelSelection, o.Optimize.BeamWorkerAssignment = n, n
	case "planner.beam_ms":
		n, err := count()
		if err != nil {
			return err
		}
		o.Optimize.BeamModelSelection = n
	case "planner.beam_wa":
		n, err := count()
		if err != nil {
			return err
		}
		o.Optimize.BeamWorkerAssignment = n
	case "planner.topo_orders":
		n, err := count()
		if err != nil {
			return err
		}
		o.Optimize.TopoOrders = n
	case "planner.time_budget":
		d, err := time.ParseDuration(val)
		if err != nil {
			return bad("want a duration such as '2s', got %q", val)
		}
		o.Optimize.TimeBudget = d
	case "exec.max_delay", "exec.on_error", "exec.batch_size", "exec.replay", "exec.state_ttl":
		var probe Exec
		if err := probe.Apply(map[string]string{key: val}); err != nil {
			return invalidf("%s: SET %v", at, err)
		}
	default:
		return bad("unknown setting (want one of %s)", strings.Join(Names(), ", "))
	}
	s.values[key] = val
	return nil
}

// Exec is the executor's share of the settings: what `tierflow run` takes as
// --max-delay, --on-error, --batch-size and --replay, and SET exec.*
// overrides.
type Exec struct {
	MaxDelay  time.Duration
	OnError   sources.OnError
	BatchSize int
	// Replay feeds FROM FILE streams at their declared RATE, as live
	// streams.
	Replay bool
	// StateTTL forgets a stream top-N's key after that long without a row
	// (event time; Flink's table.exec.state.ttl); 0 never.
	StateTTL time.Duration
}

// Apply overrides e with the exec.* values among settings (as Values gives
// them); other keys are left alone.
func (e *Exec) Apply(settings map[string]string) error {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys) // one error, the same one every time
	for _, k := range keys {
		v := settings[k]
		switch k {
		case "exec.max_delay":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return invalid{fmt.Sprintf("exec.max_delay: want a duration such as '2s', got %q", v)}
			}
			e.MaxDelay = d
		case "exec.on_error":
			p, err := sources.ParseOnError(v)
			if err != nil || v == "" {
				return invalid{fmt.Sprintf("exec.on_error: want skip or fail, got %q", v)}
			}
			e.OnError = p
		case "exec.batch_size":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return invalid{fmt.Sprintf("exec.batch_size: want a positive integer, got %q", v)}
			}
			e.BatchSize = n
		case "exec.state_ttl":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return invalid{fmt.Sprintf("exec.state_ttl: want a duration such as '1h', got %q", v)}
			}
			e.StateTTL = d
		case "exec.replay":
			on, err := strconv.ParseBool(v)
			if err != nil {
				return invalid{fmt.Sprintf("exec.replay: want true or false, got %q", v)}
			}
			e.Replay = on
		}
	}
	return nil
}

// OnErrorName is the policy as `--on-error` spells it.
func OnErrorName(p sources.OnError) string {
	if p == sources.Skip {
		return "skip"
	}
	return "fail"
}

func literal(l lang.Literal) (string, error) {
	switch v := l.(type) {
	case *lang.NumberLit:
		return v.Value, nil
	case *lang.StringLit:
		return v.Value, nil
	case *lang.BoolLit:
		return strconv.FormatBool(v.Value), nil
	}
	return "", fmt.Errorf("want a number, a string or a boolean")
}
