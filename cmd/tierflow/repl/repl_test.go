package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/sources"
	"github.com/tierflow/tierflow/planner/catalog"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const ddl = `CREATE MODEL classify TASK 'image-classification'
  VARIANTS (small FROM 'models/logreg.onnx', large FROM 'models/cnn.onnx');
CREATE STREAM shelves (camera INT, label VARCHAR, score DOUBLE)
  FROM NATS 'store.frames' FORMAT ARROW AT TIER edge RATE 40 PER SECOND;
`

// records is an Engine that replays fixed batches, whatever the query.
type records struct {
	schema *arrow.Schema
	recs   []arrow.Record
}

func (r records) Exec(context.Context, Query) (Stream, error) {
	return &replay{schema: r.schema, recs: r.recs}, nil
}

type replay struct {
	schema *arrow.Schema
	recs   []arrow.Record
}

func (r *replay) Schema() *arrow.Schema { return r.schema }
func (r *replay) Close() error          { return nil }
func (r *replay) Next(context.Context) (arrow.Record, error) {
	if len(r.recs) == 0 {
		return nil, io.EOF
	}
	rec := r.recs[0]
	r.recs = r.recs[1:]
	rec.Retain()
	return rec, nil
}

// fixture is two batches as a stream delivers them: NULLs, a long value, a
// wider number in the second batch, and non-ASCII text.
func fixture(t *testing.T, mem memory.Allocator) records {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "camera", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	batches := []string{
		`[{"camera": 1, "label": "apple", "score": 0.93},
		  {"camera": 2, "label": null, "score": 0.5},
		  {"camera": 3, "label": "a label far too long to show in one narrow table cell", "score": null}]`,
		`[{"camera": 12345, "label": "pomme · äpfel", "score": 1e-3}]`,
	}
	var recs []arrow.Record
	for _, js := range batches {
		rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return records{schema: schema, recs: recs}
}

// checkedAlloc fails the test if anything allocated is still held once the
// test and its other cleanups are done.
func checkedAlloc(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

func newTestSession(t *testing.T, eng Engine, format string) (*Session, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errw bytes.Buffer
	s, err := New(Config{Out: &out, Err: &errw, Engine: eng, Format: format})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &out, &errw
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/tierflow/repl -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestRenderGolden(t *testing.T) {
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			mem := checkedAlloc(t)
			s, out, errw := newTestSession(t, fixture(t, mem), format)
			if err := s.RunScript(context.Background(), "t.sql", strings.NewReader(ddl+"SELECT camera, label, score FROM shelves;\n")); err != nil {
				t.Fatalf("%v\n%s", err, errw)
			}
			golden(t, filepath.Join("testdata", "render", format+".golden"), out.String())
		})
	}
}

func TestTableTruncatesAndCountsRows(t *testing.T) {
	mem := checkedAlloc(t)
	s, out, _ := newTestSession(t, fixture(t, mem), "table")
	if err := s.RunScript(context.Background(), "t.sql", strings.NewReader(ddl+"SELECT camera, label, score FROM shelves;")); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "…") || strings.Contains(got, "narrow table cell") {
		t.Errorf("long cell not truncated:\n%s", got)
	}
	if !strings.HasSuffix(got, "(4 rows)\n") {
		t.Errorf("want a (4 rows) footer:\n%s", got)
	}
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if w := width(l); w > 3*maxCellWidth {
			t.Errorf("line of %d characters: %q", w, l)
		}
	}
}

func TestSessionStateAndSettings(t *testing.T) {
	s, out, errw := newTestSession(t, nil, "csv")
	ctx := context.Background()
	script := ddl + `CREATE SINK alerts TO NATS 'store.alerts' FORMAT JSON;
SET planner.beam_width = 4;
SET planner.strategy = 'exhaustive';
\d
SHOW MODELS;
DROP SINK alerts;
\d
`
	if err := s.RunScript(ctx, "t.sql", strings.NewReader(script)); err != nil {
		t.Fatalf("%v\n%s", err, errw)
	}
	if s.settings.Planner.Optimize.BeamModelSelection != 4 || s.settings.Planner.Optimize.BeamWorkerAssignment != 4 || s.settings.Planner.Strategy != "exhaustive" {
		t.Errorf("SET did not reach the planner options: %+v", s.settings.Planner)
	}
	got := out.String()
	for _, want := range []string{"alerts,sink,nats 'store.alerts' json", `classify,model,"2 variants (small, large)"`, "shelves,stream,"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if s.cat.Sink("alerts") != nil {
		t.Error("DROP SINK did not remove alerts")
	}
}

func TestScriptErrors(t *testing.T) {
	cases := []struct {
		name, src string
		kind      error
		want      string // in the error output
	}{
		{"syntax", "SHOW MODELS;\n\nSELECT a\nFORM t;\n", lang.ErrSyntax, "t.sql:4:1: "},
		{"unknown name", ddl + "SELECT nope FROM shelves;", ErrBadInput, "t.sql:5:8: "},
		{"unknown stream", "SELECT camera\n  FROM nowhere;", catalog.ErrUnknown, "t.sql:2:8: "},
		{"unknown command", "\\frobnicate\n", ErrBadInput, "t.sql:1: "},
		{"bad setting", "SET planner.nope = 1;", ErrBadInput, "unknown setting"},
		{"bad strategy", "SET planner.strategy = 'fastest';", ErrBadInput, `t.sql:1:1: SET planner.strategy: unknown strategy "fastest" (want one of `},
		{"bad format", "\\format xml\n", ErrBadInput, "unknown format"},
		{"no executor", ddl + "SELECT camera FROM shelves;", ErrNoExecutor, "does not run queries"},
		{"describe unknown", "DESCRIBE shelvs;", catalog.ErrUnknown, `no model, stream, table, sink or function named "shelvs"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _, errw := newTestSession(t, nil, "table")
			err := s.RunScript(context.Background(), "t.sql", strings.NewReader(c.src))
			if err == nil {
				t.Fatal("no error")
			}
			if c.kind == ErrBadInput {
				if !IsBadInput(err) {
					t.Errorf("IsBadInput(%v) = false", err)
				}
			} else if !errors.Is(err, c.kind) {
				t.Errorf("error %v is not %v", err, c.kind)
			}
			if IsBadInput(err) == errors.Is(err, ErrNoExecutor) {
				t.Errorf("IsBadInput(%v) = %v", err, IsBadInput(err))
			}
			if !strings.Contains(errw.String(), c.want) {
				t.Errorf("want %q in\n%s", c.want, errw)
			}
		})
	}
}

func TestScriptStopsAtFirstError(t *testing.T) {
	s, out, _ := newTestSession(t, nil, "csv")
	err := s.RunScript(context.Background(), "t.sql", strings.NewReader("SHOW SINKS;\nSHOW NOTHING;\nSHOW MODELS;\n"))
	if !errors.Is(err, lang.ErrSyntax) {
		t.Fatalf("err = %v", err)
	}
	if strings.Count(out.String(), "name,") != 1 {
		t.Errorf("want only the first SHOW to run:\n%s", out)
	}
}

func TestExplainModes(t *testing.T) {
	s, _, errw := newTestSession(t, nil, "table")
	err := s.RunScript(context.Background(), "t.sql", strings.NewReader(ddl+"\\explain\nSELECT camera FROM shelves;"))
	// Without --infra the planner cannot place anything: a clear bad-input
	// error rather than running the query.
	if err == nil || !IsBadInput(err) || !strings.Contains(errw.String(), "--infra") {
		t.Fatalf("err = %v\n%s", err, errw)
	}
	if s.explain {
		t.Error("\\explain still pending after the statement")
	}
}

func TestCompletion(t *testing.T) {
	s, _, _ := newTestSession(t, nil, "table")
	if err := s.RunScript(context.Background(), "t.sql", strings.NewReader(ddl+"CREATE SINK alerts TO STDOUT;")); err != nil {
		t.Fatal(err)
	}
	c := &completer{s: s}
	cases := []struct {
		line string
		want []string // completed words
	}{
		{"SELECT * FROM she", []string{"shelves"}},
		{"sel", []string{"select"}},
		{"SEL", []string{"SELECT"}},
		{"SELECT cam", []string{"camera"}},
		{"SELECT sco", []string{"score"}},
		{"\\d cl", []string{"classify"}},
		{"\\fo", []string{"\\format"}},
		{"\\format js", []string{"json", "jsonl"}},
		{"SET planner.be", []string{"planner.beam_ms", "planner.beam_wa", "planner.beam_width"}},
		{"SELECT upp", []string{"upper"}},
		{"SELECT string_ag", []string{"string_agg"}}, // not the internal string_agg_sorted
		{"SELECT sort_", nil},
		{"SELECT x FROM zzz", nil},
		{"SELECT * FROM s", []string{"shelves"}},                             // not score
		{"SELECT * FROM shelves CROSS JOIN LATERAL c", []string{"classify"}}, // not camera
		{"INSERT INTO a", []string{"alerts"}},
	}
	for _, tc := range cases {
		got, word := c.candidates(tc.line)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: got %q (word %q), want %q", tc.line, got, word, tc.want)
		}
	}
	// Anywhere else every kind of word is offered.
	mixed, _ := c.candidates("SELECT s")
	for _, want := range []string{"score", "select", "shelves", "sqrt"} {
		if !slices.Contains(mixed, want) {
			t.Errorf("SELECT s: %q lacks %q", mixed, want)
		}
	}
	suffixes, n := c.Do([]rune("\\d clas"), len("\\d clas"))
	if n != 4 || len(suffixes) != 1 || string(suffixes[0]) != "sify " {
		t.Errorf("Do = %q, %d", suffixes, n)
	}
}

func TestHistoryFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	if got, want := HistoryFile(), filepath.Join(dir, "tierflow", "history"); got != want {
		t.Errorf("HistoryFile() = %q, want %q", got, want)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", dir)
	if got, want := HistoryFile(), filepath.Join(dir, ".tierflow_history"); got != want {
		t.Errorf("HistoryFile() = %q, want %q", got, want)
	}
}

func TestOutputFile(t *testing.T) {
	mem := checkedAlloc(t)
	s, out, errw := newTestSession(t, fixture(t, mem), "table")
	path := filepath.Join(t.TempDir(), "res.jsonl")
	script := ddl + "\\format jsonl\n\\o " + path + "\nSELECT camera, label, score FROM shelves;\n\\o\nSHOW SINKS;\n"
	if err := s.RunScript(context.Background(), "t.sql", strings.NewReader(script)); err != nil {
		t.Fatalf("%v\n%s", err, errw)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 4 || !strings.Contains(string(b), `{"camera":12345,"label":"pomme · äpfel","score":0.001}`) {
		t.Errorf("file holds %d lines:\n%s", n, b)
	}
	if strings.Contains(out.String(), "camera") {
		t.Errorf("results leaked to stdout:\n%s", out)
	}
}

// endless is an Engine whose streams never produce a row nor end, until
// cancelled.
type endless struct{}

func (endless) Exec(_ context.Context, q Query) (Stream, error) {
	return endlessStream{q.Bound.Root.Schema()}, nil
}

type endlessStream struct{ schema *arrow.Schema }

func (e endlessStream) Schema() *arrow.Schema { return e.schema }
func (endlessStream) Close() error            { return nil }
func (endlessStream) Next(ctx context.Context) (arrow.Record, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestHelpListsEveryCommandAndSetting(t *testing.T) {
	s, out, _ := newTestSession(t, nil, "table")
	if err := s.RunScript(context.Background(), "t.sql", strings.NewReader("\\?\n")); err != nil {
		t.Fatal(err)
	}
	for _, c := range commands() {
		if !strings.Contains(out.String(), "\n  "+c.name+" ") {
			t.Errorf("\\? lacks %s", c.name)
		}
	}
	for _, k := range Settings() {
		if !strings.Contains(out.String(), k) {
			t.Errorf("\\? lacks %s", k)
		}
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if width(l) > 100 {
			t.Errorf("line too long for a terminal: %q", l)
		}
	}
}

// analyzer is an engine that can run EXPLAIN ANALYZE: it records what it
// was asked and writes a line.
type analyzer struct {
	records
	got *Query
	e   *lang.Explain
}

func (a *analyzer) Analyze(_ context.Context, q Query, e *lang.Explain, w io.Writer) error {
	a.got, a.e = &q, e
	_, err := io.WriteString(w, "analysed\n")
	return err
}

// EXPLAIN ANALYZE goes to an engine that can run it, with the statement
// bound against the session's catalog; an engine that cannot is a clear
// bad-input error at the statement.
func TestExplainAnalyzeNeedsAnAnalyzer(t *testing.T) {
	mem := checkedAlloc(t)
	a := &analyzer{records: fixture(t, mem)}
	s, out, _ := newTestSession(t, a, "table")
	if err := s.RunScript(context.Background(), "t.sql", strings.NewReader(ddl+"EXPLAIN ANALYZE (DURATION 2) SELECT camera FROM shelves;")); err != nil {
		t.Fatal(err)
	}
	if a.got == nil || a.got.Bound == nil || a.got.Catalog.Stream("shelves") == nil || len(a.e.Options) != 1 || !strings.Contains(out.String(), "analysed") {
		t.Fatalf("analyzer got %+v, output %q", a.got, out.String())
	}
	s, _, errw := newTestSession(t, fixture(t, mem), "table")
	err := s.RunScript(context.Background(), "t.sql", strings.NewReader(ddl+"EXPLAIN ANALYZE SELECT camera FROM shelves;"))
	if !IsBadInput(err) || !strings.Contains(errw.String(), "t.sql:5:1: EXPLAIN ANALYZE needs an engine") {
		t.Fatalf("err = %v\n%s", err, errw)
	}
}

// DESCRIBE shows the columns a CREATE without a column list read from its
// file (relative to the running script); a file that cannot be read is an
// error at the CREATE.
func TestDescribeInferredSchema(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.csv"), []byte("id,score,ok,at,name\n1,0.5,true,2024-01-01 00:00:00,a\n,2,,,\n"), 0o644)
	script := filepath.Join(dir, "t.sql")
	s, out, _ := newTestSession(t, nil, "csv")
	if err := s.RunScript(context.Background(), script, strings.NewReader("CREATE TABLE t FROM FILE 'x.csv';\nDESCRIBE t;\n")); err != nil {
		t.Fatal(err)
	}
	want := "id,BIGINT\nscore,DOUBLE\nok,BOOLEAN\nat,TIMESTAMP\nname,VARCHAR\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("want %q in\n%s", want, out)
	}
	err := s.RunScript(context.Background(), script, strings.NewReader("CREATE TABLE u FROM FILE 'missing.csv';\n"))
	if err == nil || !IsBadInput(err) || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
}

// screen is what a terminal shows of the bytes written to it: "\r" moves
// to the line's start, ESC[2K erases the line, "\n" starts the next one,
// other escapes (colour) are dropped.
type screen struct {
	lines []string
	cur   []rune
	col   int
}

func (s *screen) Write(p []byte) (int, error) {
	text := string(p)
	for len(text) > 0 {
		switch {
		case strings.HasPrefix(text, "\x1b[2K"):
			s.cur, text = s.cur[:0], text[4:]
			continue
		case strings.HasPrefix(text, "\x1b["):
			end := strings.IndexFunc(text[2:], func(r rune) bool { return r >= '@' && r <= '~' })
			text = text[2+end+1:]
			continue
		}
		r := []rune(text)[0]
		text = text[len(string(r)):]
		switch r {
		case '\r':
			s.col = 0
		case '\n':
			s.lines = append(s.lines, string(s.cur))
			s.cur, s.col = nil, 0
		default:
			if s.col < len(s.cur) {
				s.cur[s.col] = r
			} else {
				s.cur = append(s.cur, r)
			}
			s.col++
		}
	}
	return len(p), nil
}

func (s *screen) String() string { return strings.Join(append(s.lines, string(s.cur)), "\n") }

// TestJSONOnATerminal: on a terminal, where the status line is drawn under
// the rows and erased before the next ones, \format json still shows the
// whole array: the opening bracket and the last row used to be erased with
// the status line (their line was still open).
func TestJSONOnATerminal(t *testing.T) {
	mem := checkedAlloc(t)
	var term screen
	s, err := New(Config{Out: &term, Err: &term, Engine: fixture(t, mem), Format: "json", Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RunScript(context.Background(), "t.sql", strings.NewReader(ddl+"SELECT camera, label, score FROM shelves;\n")); err != nil {
		t.Fatal(err)
	}
	shown := term.String()
	start := strings.Index(shown, "[{")
	end := strings.Index(shown, "}]")
	if start < 0 || end < start {
		t.Fatalf("no whole JSON array on the screen:\n%s", shown)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(shown[start:end+2]), &rows); err != nil || len(rows) != 4 {
		t.Fatalf("the screen's array has %d rows (%v), want 4:\n%s", len(rows), err, shown)
	}
}

// quietEngine runs a query whose source has received nothing: its stream
// ends after a while, and says it is waiting on a subject meanwhile.
type quietEngine struct{ schema *arrow.Schema }

func (e quietEngine) Exec(context.Context, Query) (Stream, error) {
	return &quietStream{schema: e.schema, end: time.After(3 * statusEvery)}, nil
}

type quietStream struct {
	schema *arrow.Schema
	end    <-chan time.Time
}

func (q *quietStream) Schema() *arrow.Schema { return q.schema }
func (q *quietStream) Close() error          { return nil }
func (q *quietStream) Next(ctx context.Context) (arrow.Record, error) {
	select {
	case <-q.end:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (q *quietStream) Silent(time.Duration) []sources.Silence {
	return []sources.Silence{{What: `stream shelves, NATS subject "store.frames"`, For: 4 * time.Second}}
}

// TestQuietSourceIsShown: a query whose source receives nothing says what
// it waits on: in the status line on a terminal, once on stderr otherwise
// (it said nothing, and looked hung).
func TestQuietSourceIsShown(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "camera", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, interactive := range []bool{true, false} {
		var out, errw bytes.Buffer
		s, err := New(Config{Out: &out, Err: &errw, Engine: quietEngine{schema}, Interactive: interactive})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RunScript(context.Background(), "t.sql", strings.NewReader(ddl+"SELECT camera FROM shelves;\n")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		want := `-- waiting 4s on stream shelves, NATS subject "store.frames": nothing has arrived yet (Ctrl-C stops)` + "\n"
		if interactive {
			want = `; waiting on stream shelves, NATS subject "store.frames" (Ctrl-C cancels)`
		}
		if n := strings.Count(errw.String(), want); n == 0 || !interactive && n != 1 {
			t.Errorf("interactive %v: stderr says %d times %q:\n%q", interactive, n, want, errw.String())
		}
	}
}

// width is how many columns s takes on a terminal (a rune each).
func width(s string) int { return utf8.RuneCountInString(s) }
