package catalog

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/tierflow/tierflow/planner/internal/yamlx"
)

// LoadFile reads a catalog YAML file.
func LoadFile(path string) (*Catalog, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// Parse decodes catalog YAML. Every problem is reported at once (yamlx.Problems,
// wrapping ErrInvalid), each at the token it blames.
func Parse(file string, src []byte) (*Catalog, error) {
	d := &yamlx.Decoder{File: file}
	c := &Catalog{}
	root := d.Parse(src)
	if root != nil {
		fs := d.Map(root, "catalog", "notes", "models", "streams", "tables", "sinks", "functions")
		c.Notes = d.Str(fs["notes"], "notes")
		for _, n := range d.Seq(fs["models"].Value, "models") {
			if m := decodeModel(d, n); m != nil {
				c.Models = append(c.Models, m)
			}
		}
		for _, n := range d.Seq(fs["streams"].Value, "streams") {
			c.Streams = append(c.Streams, decodeStream(d, n))
		}
		for _, n := range d.Seq(fs["tables"].Value, "tables") {
			c.Tables = append(c.Tables, decodeTable(d, n))
		}
		for _, n := range d.Seq(fs["sinks"].Value, "sinks") {
			c.Sinks = append(c.Sinks, decodeSink(d, n))
		}
		for _, n := range d.Seq(fs["functions"].Value, "functions") {
			ff := d.Map(n, "function", "name", "output_kb", "provenance")
			c.Functions = append(c.Functions, &Function{
				Name:       d.Str(d.Required(n, ff, "name", "function"), "function.name"),
				OutputKB:   d.NonNegFloat(d.Required(n, ff, "output_kb", "function"), "function.output_kb", 0),
				Provenance: d.Str(ff["provenance"], "function.provenance"),
				Pos:        d.Pos(n),
			})
		}
	}
	for _, p := range c.Validate() {
		d.ErrorAt(p.Pos, "%s", p.Msg)
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

func decodeColumns(d *yamlx.Decoder, f yamlx.Field, what string) []Column {
	var out []Column
	for _, n := range d.Seq(f.Value, what) {
		fs := d.Map(n, what, "name", "type", "values")
		col := Column{
			Name: d.Str(d.Required(n, fs, "name", what), what+".name"),
			Type: d.Str(d.Required(n, fs, "type", what), what+".type"),
			Pos:  d.Pos(n),
		}
		if v := fs["values"]; v.Value != nil {
			col.Values = map[string]float64{}
			total := 0.0
			for _, p := range d.Pairs(v.Value, what+".values") {
				f := d.NonNegFloat(p, what+".values."+p.Key.Value, 0)
				if f > 1 {
					d.Errorf(p.Value, "%s.values.%s: %g is not a fraction of rows (0..1)", what, p.Key.Value, f)
				}
				col.Values[p.Key.Value] = f
				total += f
			}
			if total > 1.0001 {
				d.Errorf(v.Value, "%s.values: the fractions add up to %.4g, more than 1", what, total)
			}
		}
		if t := fs["type"]; t.Value != nil && col.Type != "" {
			if _, err := ParseType(col.Type); err != nil {
				d.Errorf(t.Value, "%s.type: %v", what, err)
			}
		}
		out = append(out, col)
	}
	return out
}

func decodeModel(d *yamlx.Decoder, n *yaml.Node) *Model {
	fs := d.Map(n, "model", "name", "task", "inputs", "outputs", "output_ratio", "variants", "end_to_end", "labels", "max_batch", "max_delay_ms", "image", "decode", "provenance")
	m := &Model{
		Name:        d.Str(d.Required(n, fs, "name", "model"), "model.name"),
		Task:        d.Str(fs["task"], "model.task"),
		Inputs:      decodeColumns(d, fs["inputs"], "model.inputs"),
		Outputs:     decodeColumns(d, fs["outputs"], "model.outputs"),
		OutputRatio: d.NonNegFloat(fs["output_ratio"], "model.output_ratio", 0),
		Labels:      d.Str(fs["labels"], "model.labels"),
		MaxBatch:    d.Int(fs["max_batch"], "model.max_batch", 0),
		MaxDelayMs:  d.NonNegFloat(fs["max_delay_ms"], "model.max_delay_ms", 0),
		Provenance:  d.Str(fs["provenance"], "model.provenance"),
		Pos:         d.Pos(n),
	}
	if f := fs["image"]; f.Value != nil {
		m.Image = decodeImageInput(d, f)
	}
	if f := fs["decode"]; f.Value != nil {
		m.Decode = decodeDecode(d, f)
	}
	if f := fs["max_batch"]; f.Value != nil && (m.MaxBatch < 1 || m.MaxBatch > 4096) {
		d.Errorf(f.Value, "model.max_batch: %d rows is not a batch size (1..4096)", m.MaxBatch)
	}
	what := "model"
	if m.Name != "" {
		what += " " + m.Name
	}
	vs := d.Required(n, fs, "variants", what)
	for _, vn := range d.Seq(vs.Value, "variants") {
		m.Variants = append(m.Variants, decodeVariant(d, vn))
	}
	if e := fs["end_to_end"]; e.Value != nil {
		efs := d.Map(e.Value, "end_to_end", "models", "rows")
		ee := &EndToEnd{Models: d.Strings(efs["models"], "end_to_end.models"), Pos: d.Pos(e.Value)}
		for _, rn := range d.Seq(efs["rows"].Value, "end_to_end.rows") {
			rfs := d.Map(rn, "end_to_end row", "variants", "accuracy")
			ee.Rows = append(ee.Rows, EndToEndRow{
				Variants: d.Strings(d.Required(rn, rfs, "variants", "end_to_end row"), "variants"),
				Accuracy: d.Float(d.Required(rn, rfs, "accuracy", "end_to_end row"), "accuracy", 0),
			})
		}
		m.EndToEnd = ee
	}
	return m
}

func decodeImageInput(d *yamlx.Decoder, f yamlx.Field) *ImageInput {
	fs := d.Map(f.Value, "model.image", "fit", "mean", "std", "bgr")
	im := &ImageInput{
		Fit:  d.Str(d.Required(f.Value, fs, "fit", "model.image"), "model.image.fit"),
		Mean: d.Floats(fs["mean"], "model.image.mean"),
		Std:  d.Floats(fs["std"], "model.image.std"),
		Pos:  d.Pos(f.Value),
	}
	im.BGR = d.Bool(fs["bgr"], "model.image.bgr", false)
	if fv := fs["fit"]; fv.Value != nil && !oneOf(im.Fit, "long_side", "height") {
		d.Errorf(fv.Value, "model.image.fit: want long_side or height, got %q", im.Fit)
	}
	for _, k := range []string{"mean", "std"} {
		v := fs[k]
		xs := im.Mean
		if k == "std" {
			xs = im.Std
		}
		if v.Value != nil && len(xs) != 3 {
			d.Errorf(v.Value, "model.image.%s: want one value per channel [r, g, b], got %d", k, len(xs))
		}
		if k == "std" {
			for _, x := range xs {
				if x <= 0 {
					d.Errorf(v.Value, "model.image.std: %v must be positive", x)
				}
			}
		}
	}
	return im
}

func decodeDecode(d *yamlx.Decoder, f yamlx.Field) *Decode {
	fs := d.Map(f.Value, "model.decode", "kind", "dictionary", "threshold", "box_threshold", "unclip_ratio", "min_size")
	dc := &Decode{
		Kind:         d.Str(d.Required(f.Value, fs, "kind", "model.decode"), "model.decode.kind"),
		Dictionary:   d.Str(fs["dictionary"], "model.decode.dictionary"),
		Threshold:    d.NonNegFloat(fs["threshold"], "model.decode.threshold", 0),
		BoxThreshold: d.NonNegFloat(fs["box_threshold"], "model.decode.box_threshold", 0),
		UnclipRatio:  d.NonNegFloat(fs["unclip_ratio"], "model.decode.unclip_ratio", 0),
		MinSize:      d.NonNegFloat(fs["min_size"], "model.decode.min_size", 0),
		Pos:          d.Pos(f.Value),
	}
	switch k := fs["kind"]; {
	case k.Value == nil:
	case dc.Kind == "ctc" && dc.Dictionary == "":
		d.Errorf(f.Value, "model.decode: kind ctc needs a dictionary file")
	case !oneOf(dc.Kind, "db", "ctc"):
		d.Errorf(k.Value, "model.decode.kind: want db (text boxes) or ctc (text), got %q", dc.Kind)
	}
	for _, k := range []string{"threshold", "box_threshold"} {
		if v := fs[k]; v.Value != nil {
			x := dc.Threshold
			if k == "box_threshold" {
				x = dc.BoxThreshold
			}
			if x > 1 {
				d.Errorf(v.Value, "model.decode.%s: %v is not a probability (0..1)", k, x)
			}
		}
	}
	return dc
}

func decodeVariant(d *yamlx.Decoder, n *yaml.Node) *Variant {
	fs := d.Map(n, "variant", "name", "file", "accuracy", "profile", "output_kb", "proxy_cost", "latency_ms", "classes", "provenance", "input_size")
	v := &Variant{
		Name:       d.Str(d.Required(n, fs, "name", "variant"), "variant.name"),
		File:       d.Str(fs["file"], "variant.file"),
		Accuracy:   d.Float(fs["accuracy"], "variant.accuracy", 0),
		OutputKB:   d.NonNegFloat(d.Required(n, fs, "output_kb", "variant"), "variant.output_kb", 0),
		ProxyCost:  d.NonNegFloat(fs["proxy_cost"], "variant.proxy_cost", 0),
		Provenance: d.Str(fs["provenance"], "variant.provenance"),
		Latency:    map[string]Latency{},
		Pos:        d.Pos(n),
	}
	if f := fs["input_size"]; f.Value != nil {
		for _, x := range d.Floats(f, "variant.input_size") {
			if x < 1 || x != float64(int(x)) {
				d.Errorf(f.Value, "variant.input_size: %v is not a size in pixels", x)
				continue
			}
			v.InputSize = append(v.InputSize, int(x))
		}
		if len(v.InputSize) != 2 {
			d.Errorf(f.Value, "variant.input_size: want [height, width]")
		}
	}
	for _, rn := range d.Seq(fs["profile"].Value, "variant.profile") {
		rfs := d.Map(rn, "profile row", "inputs", "output")
		v.Profile = append(v.Profile, ProfileRow{
			Inputs: d.Floats(rfs["inputs"], "profile.inputs"),
			Output: d.Float(d.Required(rn, rfs, "output", "profile row"), "profile.output", 0),
		})
	}
	seen := map[string]bool{}
	for _, cn := range d.Seq(fs["classes"].Value, "variant.classes") {
		cfs := d.Map(cn, "classes row", "class", "recall", "support")
		c := ClassRecall{
			Class:   d.Str(d.Required(cn, cfs, "class", "classes row"), "classes.class"),
			Recall:  d.NonNegFloat(d.Required(cn, cfs, "recall", "classes row"), "classes.recall", 0),
			Support: d.Int(cfs["support"], "classes.support", 0),
		}
		if c.Recall > 100 {
			d.Errorf(cfs["recall"].Value, "classes.recall: %v is not a percentage (0..100)", c.Recall)
		}
		if c.Support < 0 {
			d.Errorf(cfs["support"].Value, "classes.support: %d must not be negative", c.Support)
		}
		if seen[c.Class] {
			d.Errorf(cn, "variant %s: class %q profiled twice", v.Name, c.Class)
		}
		seen[c.Class] = true
		v.Classes = append(v.Classes, c)
	}
	lat := d.Required(n, fs, "latency_ms", "variant "+v.Name)
	for _, p := range d.Pairs(lat.Value, "latency_ms") {
		what := "latency_ms." + p.Key.Value
		var l Latency
		if p.Value != nil && p.Value.Kind == yaml.ScalarNode {
			// One number: the same latency at every percentile.
			x := d.NonNegFloat(yamlx.Field{Value: p.Value}, what, 0)
			l = Latency{P50: x, P75: x, P90: x}
		} else {
			lfs := d.Map(p.Value, what, "p50", "p75", "p90", "by_batch", "threads", "by_threads")
			l = decodePercentiles(d, p.Value, lfs, what)
			if bb := lfs["by_batch"]; bb.Value != nil {
				l.ByBatch = decodeByBatch(d, bb, what+".by_batch")
			}
			l.Threads = d.Int(lfs["threads"], what+".threads", 0)
			if f := lfs["threads"]; f.Value != nil && (l.Threads < 1 || l.Threads > 1024) {
				d.Errorf(f.Value, "%s.threads: %d is not a thread count (1..1024)", what, l.Threads)
			}
			if bt := lfs["by_threads"]; bt.Value != nil {
				if l.Threads == 0 {
					d.Errorf(bt.Value, "%s.by_threads: say which thread count the latency above was measured with (threads:)", what)
				}
				l.ByThreads = decodeByThreads(d, bt, what+".by_threads")
			}
		}
		if l.P50 == 0 {
			d.Errorf(p.Key, "%s: latency must be positive (leave the worker type out if the variant cannot run there)", what)
		}
		v.Latency[p.Key.Value] = l
	}
	return v
}

// decodePercentiles reads p50/p75/p90, which must not decrease.
func decodePercentiles(d *yamlx.Decoder, n *yaml.Node, fs map[string]yamlx.Field, what string) Latency {
	l := Latency{
		P50: d.NonNegFloat(d.Required(n, fs, "p50", what), what+".p50", 0),
		P75: d.NonNegFloat(d.Required(n, fs, "p75", what), what+".p75", 0),
		P90: d.NonNegFloat(d.Required(n, fs, "p90", what), what+".p90", 0),
	}
	if l.P50 > l.P75 || l.P75 > l.P90 {
		d.Errorf(n, "%s: percentiles must not decrease (p50 %v, p75 %v, p90 %v)", what, l.P50, l.P75, l.P90)
	}
	return l
}

// decodeByBatch reads latency_ms.<type>.by_batch: batch size -> the
// percentiles of one call of that many rows (ms).
func decodeByBatch(d *yamlx.Decoder, f yamlx.Field, what string) map[int]Latency {
	out := map[int]Latency{}
	for _, p := range d.Pairs(f.Value, what) {
		b, err := strconv.Atoi(p.Key.Value)
		if err != nil || b < 1 || b > 4096 {
			d.Errorf(p.Key, "%s: %q is not a batch size (1..4096)", what, p.Key.Value)
			continue
		}
		w := what + "." + p.Key.Value
		l := decodePercentiles(d, p.Value, d.Map(p.Value, w, "p50", "p75", "p90"), w)
		if l.P50 == 0 {
			d.Errorf(p.Key, "%s: latency must be positive", w)
		}
		out[b] = l
	}
	return out
}

// decodeByThreads reads latency_ms.<type>.by_threads: intra-op thread
// count -> the latency per item (p50/p75/p90) and per call (by_batch) of a
// session with that many threads.
func decodeByThreads(d *yamlx.Decoder, f yamlx.Field, what string) map[int]Latency {
	out := map[int]Latency{}
	for _, p := range d.Pairs(f.Value, what) {
		t, err := strconv.Atoi(p.Key.Value)
		if err != nil || t < 1 || t > 1024 {
			d.Errorf(p.Key, "%s: %q is not a thread count (1..1024)", what, p.Key.Value)
			continue
		}
		w := what + "." + p.Key.Value
		lfs := d.Map(p.Value, w, "p50", "p75", "p90", "by_batch", "threads")
		l := decodePercentiles(d, p.Value, lfs, w)
		if l.P50 == 0 {
			d.Errorf(p.Key, "%s: latency must be positive", w)
		}
		if f := lfs["threads"]; f.Value != nil && d.Int(f, w+".threads", 0) != t {
			d.Errorf(f.Value, "%s.threads: the profile of %d threads says %s", w, t, f.Value.Value)
		}
		if bb := lfs["by_batch"]; bb.Value != nil {
			l.ByBatch = decodeByBatch(d, bb, w+".by_batch")
		}
		l.Threads = t
		out[t] = l
	}
	return out
}

func decodeStream(d *yamlx.Decoder, n *yaml.Node) *Stream {
	fs := d.Map(n, "stream", "name", "columns", "source", "subject", "format", "tier", "locations", "rate", "item_kb", "provenance", "source_max_delay_ms")
	s := &Stream{
		Name:             d.Str(d.Required(n, fs, "name", "stream"), "stream.name"),
		Columns:          decodeColumns(d, fs["columns"], "stream.columns"),
		Source:           d.Str(fs["source"], "stream.source"),
		Subject:          d.Str(fs["subject"], "stream.subject"),
		Format:           d.Str(fs["format"], "stream.format"),
		Tier:             d.Str(fs["tier"], "stream.tier"),
		Locations:        d.Int(fs["locations"], "stream.locations", 0),
		Rate:             d.NonNegFloat(fs["rate"], "stream.rate", 0),
		ItemKB:           d.NonNegFloat(fs["item_kb"], "stream.item_kb", 0),
		SourceMaxDelayMs: d.NonNegFloat(fs["source_max_delay_ms"], "stream.source_max_delay_ms", 0),
		Provenance:       d.Str(fs["provenance"], "stream.provenance"),
		Pos:              d.Pos(n),
	}
	if f := fs["source"]; f.Value != nil && !oneOf(s.Source, "nats", "jetstream", "file") {
		d.Errorf(f.Value, "stream.source: want nats, jetstream or file, got %q", s.Source)
	}
	return s
}

func decodeTable(d *yamlx.Decoder, n *yaml.Node) *Table {
	fs := d.Map(n, "table", "name", "columns", "path", "format")
	return &Table{
		Name:    d.Str(d.Required(n, fs, "name", "table"), "table.name"),
		Columns: decodeColumns(d, fs["columns"], "table.columns"),
		Path:    d.Str(d.Required(n, fs, "path", "table"), "table.path"),
		Format:  d.Str(fs["format"], "table.format"),
		Pos:     d.Pos(n),
	}
}

func decodeSink(d *yamlx.Decoder, n *yaml.Node) *Sink {
	fs := d.Map(n, "sink", "name", "kind", "target", "format")
	s := &Sink{
		Name:   d.Str(d.Required(n, fs, "name", "sink"), "sink.name"),
		Kind:   d.Str(d.Required(n, fs, "kind", "sink"), "sink.kind"),
		Target: d.Str(fs["target"], "sink.target"),
		Format: d.Str(fs["format"], "sink.format"),
		Pos:    d.Pos(n),
	}
	if f := fs["kind"]; f.Value != nil && !oneOf(s.Kind, "nats", "jetstream", "file", "stdout", "discard") {
		d.Errorf(f.Value, "sink.kind: want nats, jetstream, file, stdout or discard, got %q", s.Kind)
	}
	return s
}

func oneOf(s string, xs ...string) bool {
	for _, x := range xs {
		if equalFold(s, x) {
			return true
		}
	}
	return false
}

// Validate checks cross-references and uniqueness, returning every problem.
func (c *Catalog) Validate() yamlx.Problems {
	var ps yamlx.Problems
	bad := func(p Pos, format string, args ...any) {
		ps = append(ps, yamlx.Problem{Pos: p, Msg: fmt.Sprintf(format, args...)})
	}
	seen := map[string]Pos{}
	name := func(kind, n string, p Pos) {
		if n == "" {
			return
		}
		key := lower(n)
		if q, ok := seen[key]; ok {
			bad(p, "%s %q: name already used at %s", kind, n, q)
			return
		}
		seen[key] = p
	}
	for _, m := range c.Models {
		name("model", m.Name, m.Pos)
		if len(m.Variants) == 0 {
			bad(m.Pos, "model %q: needs at least one variant", m.Name)
		}
		vseen := map[string]bool{}
		for _, v := range m.Variants {
			if vseen[v.Name] {
				bad(v.Pos, "model %q: duplicate variant %q", m.Name, v.Name)
			}
			vseen[v.Name] = true
			if len(v.Latency) == 0 {
				bad(v.Pos, "model %q variant %q: no latency for any worker type: it could run nowhere", m.Name, v.Name)
			}
		}
	}
	for _, s := range c.Streams {
		name("stream", s.Name, s.Pos)
	}
	for _, t := range c.Tables {
		name("table", t.Name, t.Pos)
	}
	for _, s := range c.Sinks {
		name("sink", s.Name, s.Pos)
	}
	fseen := map[string]Pos{}
	for _, f := range c.Functions {
		if q, ok := fseen[lower(f.Name)]; ok && f.Name != "" {
			bad(f.Pos, "function %q: already measured at %s", f.Name, q)
		}
		fseen[lower(f.Name)] = f.Pos
	}
	for _, m := range c.Models {
		if m.EndToEnd == nil {
			continue
		}
		var ups []*Model
		for _, u := range m.EndToEnd.Models {
			um := c.Model(u)
			if um == nil {
				bad(m.EndToEnd.Pos, "model %q end_to_end: unknown model %q", m.Name, u)
			}
			ups = append(ups, um)
		}
		for i, r := range m.EndToEnd.Rows {
			if len(r.Variants) != len(ups) {
				bad(m.EndToEnd.Pos, "model %q end_to_end row %d: %d variants for %d models", m.Name, i+1, len(r.Variants), len(ups))
				continue
			}
			for j, vn := range r.Variants {
				if ups[j] != nil && ups[j].Variant(vn) == nil {
					bad(m.EndToEnd.Pos, "model %q end_to_end row %d: model %q has no variant %q", m.Name, i+1, ups[j].Name, vn)
				}
			}
		}
	}
	return ps
}

func lower(s string) string { return string(bytes.ToLower([]byte(s))) }

// Marshal encodes the catalog as YAML (the same schema Parse reads).
func (c *Catalog) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
