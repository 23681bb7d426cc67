// Package yamlx decodes YAML configuration by hand from yaml.v3 nodes so that
// every problem in a file is reported at once, each as file:line:col pointing at
// the offending token. The catalog and infrastructure loaders use it; it imports
// nothing of tierflow.
package yamlx

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrInvalid is the kind of every problem found in a configuration file.
var ErrInvalid = errors.New("invalid configuration")

// Pos is a position in a configuration file. Line and Col are 1-based; zero
// means unknown (a value built in code rather than read from a file).
type Pos struct {
	File string `json:"-" yaml:"-"`
	Line int    `json:"-" yaml:"-"`
	Col  int    `json:"-" yaml:"-"`
}

func (p Pos) String() string {
	if p.Line == 0 {
		if p.File == "" {
			return "<config>"
		}
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Problem is one error at one position.
type Problem struct {
	Pos Pos
	Msg string
}

func (p Problem) Error() string { return p.Pos.String() + ": " + p.Msg }

// Problems is every problem found in a file, in file order. It wraps ErrInvalid.
type Problems []Problem

func (ps Problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (ps Problems) Unwrap() error { return ErrInvalid }

// Decoder collects problems while a loader walks a document.
type Decoder struct {
	File     string
	problems Problems
}

// Pos returns the position of n.
func (d *Decoder) Pos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: d.File}
	}
	return Pos{File: d.File, Line: n.Line, Col: n.Column}
}

// Errorf records a problem at n.
func (d *Decoder) Errorf(n *yaml.Node, format string, args ...any) {
	d.problems = append(d.problems, Problem{Pos: d.Pos(n), Msg: fmt.Sprintf(format, args...)})
}

// ErrorAt records a problem at p.
func (d *Decoder) ErrorAt(p Pos, format string, args ...any) {
	d.problems = append(d.problems, Problem{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// Err returns the problems found so far sorted by position, or nil.
func (d *Decoder) Err() error {
	if len(d.problems) == 0 {
		return nil
	}
	ps := append(Problems(nil), d.problems...)
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Pos.Line != ps[j].Pos.Line {
			return ps[i].Pos.Line < ps[j].Pos.Line
		}
		return ps[i].Pos.Col < ps[j].Pos.Col
	})
	return ps
}

// Parse reads a YAML document and returns its top-level node (nil for an
// empty document). A syntax error is returned as Problems with its line.
func (d *Decoder) Parse(src []byte) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		line := 0
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		// yaml.v3 reports syntax errors as "yaml: line N: message".
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			if i := strings.Index(rest, ":"); i > 0 {
				if n, err := strconv.Atoi(rest[:i]); err == nil {
					line = n
					msg = strings.TrimSpace(rest[i+1:])
				}
			}
		}
		d.ErrorAt(Pos{File: d.File, Line: line, Col: 1}, "%s", msg)
		return nil
	}
	if len(doc.Content) == 0 {
		return nil
	}
	if written, expanded, first := aliasing(&doc); expanded > max(written, MaxExpandedNodes) {
		d.Errorf(first, "its aliases expand the document to more than %d nodes (%d written): a loader walks every copy, so nested aliases of lists multiply; write the repeated entries out", max(written, MaxExpandedNodes), written)
		return nil
	}
	return resolve(doc.Content[0])
}

// MaxExpandedNodes bounds what aliases may expand a document to. The
// loaders walk yaml.v3's nodes by hand, following each alias to its anchor,
// which skips the bound yaml.v3's own decoder puts on aliasing: a 6.8 KB
// catalog of lists of aliases of lists took 5.6 s and 980 MB to reach its
// first error, and one twice as deep would take hours. A document without
// aliases is never refused; with them it may reach 2^20 nodes, about a
// tenth of a second of loading and a thousand times the largest catalog
// shipped (examples/aicity, 1,106 nodes).
const MaxExpandedNodes = 1 << 20

// aliasing returns how many nodes doc has as written, how many a walk that
// follows its aliases visits (saturating past MaxExpandedNodes), and its
// first alias. Each node's expanded size is computed once.
func aliasing(doc *yaml.Node) (written, expanded int, first *yaml.Node) {
	memo := map[*yaml.Node]int{}
	var size func(n *yaml.Node, depth int) int
	size = func(n *yaml.Node, depth int) int {
		if n == nil {
			return 0
		}
		if n.Kind == yaml.AliasNode {
			if first == nil {
				first = n
			}
			if depth > 1000 {
				return MaxExpandedNodes + 1 // an alias of itself
			}
			return 1 + size(n.Alias, depth+1)
		}
		if v, ok := memo[n]; ok {
			return v
		}
		memo[n] = MaxExpandedNodes + 1 // in progress: a cycle saturates
		total := 1
		for _, c := range n.Content {
			total = min(total+size(c, depth+1), MaxExpandedNodes+1)
		}
		memo[n] = total
		return total
	}
	expanded = size(doc, 0)
	var count func(n *yaml.Node)
	count = func(n *yaml.Node) {
		written++
		for _, c := range n.Content {
			count(c)
		}
	}
	count(doc)
	return written, expanded, first
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// Field is one key of a mapping with its value.
type Field struct {
	Key   *yaml.Node
	Value *yaml.Node
}

// Map checks that n is a mapping whose keys are all in known, reports unknown
// and duplicate keys at the key token, and returns the values by key.
func (d *Decoder) Map(n *yaml.Node, what string, known ...string) map[string]Field {
	n = resolve(n)
	out := map[string]Field{}
	if n == nil {
		return out
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, "%s: want a mapping, got %s", what, kindName(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if len(known) > 0 && !contains(known, k.Value) {
			msg := fmt.Sprintf("%s: unknown field %q", what, k.Value)
			if s := Suggest(k.Value, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.Errorf(k, "%s", msg)
			continue
		}
		if _, dup := out[k.Value]; dup {
			d.Errorf(k, "%s: duplicate field %q", what, k.Value)
			continue
		}
		out[k.Value] = Field{Key: k, Value: v}
	}
	return out
}

// Pairs returns the entries of a mapping in file order (for maps keyed by
// user names, such as latency per worker type).
func (d *Decoder) Pairs(n *yaml.Node, what string) []Field {
	n = resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, "%s: want a mapping, got %s", what, kindName(n))
		return nil
	}
	var out []Field
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if seen[k.Value] {
			d.Errorf(k, "%s: duplicate key %q", what, k.Value)
			continue
		}
		seen[k.Value] = true
		out = append(out, Field{Key: k, Value: resolve(n.Content[i+1])})
	}
	return out
}

// Seq returns the items of a sequence (nil node: none).
func (d *Decoder) Seq(n *yaml.Node, what string) []*yaml.Node {
	n = resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.Errorf(n, "%s: want a list, got %s", what, kindName(n))
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out
}

// Str decodes a scalar string; missing fields give "".
func (d *Decoder) Str(f Field, what string) string {
	if f.Value == nil {
		return ""
	}
	if f.Value.Kind != yaml.ScalarNode {
		d.Errorf(f.Value, "%s: want a string, got %s", what, kindName(f.Value))
		return ""
	}
	return f.Value.Value
}

// Required reports a missing field at the mapping node m.
func (d *Decoder) Required(m *yaml.Node, fs map[string]Field, key, what string) Field {
	f, ok := fs[key]
	if !ok {
		d.Errorf(m, "%s: missing required field %q", what, key)
	}
	return f
}

// Float decodes a number; missing fields give def.
func (d *Decoder) Float(f Field, what string, def float64) float64 {
	if f.Value == nil {
		return def
	}
	if f.Value.Kind != yaml.ScalarNode {
		d.Errorf(f.Value, "%s: want a number, got %s", what, kindName(f.Value))
		return def
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(f.Value.Value, "_", ""), 64)
	if err != nil {
		d.Errorf(f.Value, "%s: want a number, got %q", what, f.Value.Value)
		return def
	}
	return v
}

// NonNegFloat decodes a number that must be >= 0.
func (d *Decoder) NonNegFloat(f Field, what string, def float64) float64 {
	v := d.Float(f, what, def)
	if v < 0 {
		d.Errorf(f.Value, "%s: must not be negative, got %v", what, v)
		return def
	}
	return v
}

// Int decodes an integer; missing fields give def.
func (d *Decoder) Int(f Field, what string, def int) int {
	if f.Value == nil {
		return def
	}
	if f.Value.Kind != yaml.ScalarNode {
		d.Errorf(f.Value, "%s: want an integer, got %s", what, kindName(f.Value))
		return def
	}
	v, err := strconv.Atoi(strings.ReplaceAll(f.Value.Value, "_", ""))
	if err != nil {
		d.Errorf(f.Value, "%s: want an integer, got %q", what, f.Value.Value)
		return def
	}
	return v
}

// Bool decodes a boolean; missing fields give def.
func (d *Decoder) Bool(f Field, what string, def bool) bool {
	if f.Value == nil {
		return def
	}
	switch strings.ToLower(f.Value.Value) {
	case "true", "yes", "on":
		return true
	case "false", "no", "off":
		return false
	}
	d.Errorf(f.Value, "%s: want true or false, got %q", what, f.Value.Value)
	return def
}

// Strings decodes a list of strings (a single scalar is a list of one).
func (d *Decoder) Strings(f Field, what string) []string {
	if f.Value == nil {
		return nil
	}
	if f.Value.Kind == yaml.ScalarNode {
		return []string{f.Value.Value}
	}
	var out []string
	for _, it := range d.Seq(f.Value, what) {
		if it.Kind != yaml.ScalarNode {
			d.Errorf(it, "%s: want a string, got %s", what, kindName(it))
			continue
		}
		out = append(out, it.Value)
	}
	return out
}

// Floats decodes a list of numbers.
func (d *Decoder) Floats(f Field, what string) []float64 {
	var out []float64
	for _, it := range d.Seq(f.Value, what) {
		out = append(out, d.Float(Field{Value: it}, what, 0))
	}
	return out
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Suggest returns the candidate closest to s by edit distance when it is close
// enough to be a likely typo, else "".
func Suggest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if dd := distance(strings.ToLower(s), strings.ToLower(c)); dd < bestD {
			best, bestD = c, dd
		}
	}
	if bestD <= 2 || (bestD <= len(s)/3 && bestD > 0) {
		return best
	}
	return ""
}

func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
