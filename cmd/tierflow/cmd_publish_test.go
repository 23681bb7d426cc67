package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
	"github.com/tierflow/tierflow/runtime/connectors"
)

const statsQuery = `SELECT s.site, window_start, window_end,
       count(*) AS readings,
       round(avg(r.temperature), 2) AS avg_temp,
       max(r.humidity) AS max_humidity
FROM readings AS r JOIN sensors AS s ON r.sensor = s.sensor
WHERE r.temperature BETWEEN -40 AND 60
GROUP BY s.site, TUMBLE(r.ts, INTERVAL '10' SECOND);
`

// natsScript writes the streaming example reading FROM source and, when sink
// is not empty, writing TO it.
func natsScript(t *testing.T, dir, source, sink string) string {
	t.Helper()
	ex, err := filepath.Abs(filepath.Join("..", "..", "examples", "streaming"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(source, "'") {
		source = fmt.Sprintf("FILE '%s'", filepath.Join(ex, source))
	}
	s := fmt.Sprintf("CREATE STREAM readings (sensor INT, ts TIMESTAMP, temperature DOUBLE, humidity DOUBLE) FROM %s;\n", source)
	s += fmt.Sprintf("CREATE TABLE sensors (sensor INT, site VARCHAR) FROM FILE '%s' FORMAT CSV;\n", filepath.Join(ex, "sensors.csv"))
	q := statsQuery
	if sink != "" {
		s += "CREATE SINK stats TO " + sink + ";\n"
		q = "INSERT INTO stats " + q
	}
	f, err := os.CreateTemp(dir, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	p := f.Name()
	if err := os.WriteFile(p, []byte(s+q), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func waitFor(t *testing.T, total time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(total)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPublishRunOverNATSMatchesFileRun: `tierflow publish` feeds the example
// readings into a subject (core NATS, and a JetStream stream), `tierflow run`
// reads them FROM NATS and writes its windows TO NATS, and a subscriber sees
// exactly the rows the file-based run prints (1206 rows read: the readings
// and the 6 rows of the sensors table).
func TestPublishRunOverNATSMatchesFileRun(t *testing.T) {
	dir := t.TempDir()
	code, want, errs := runCLI(t, "", "--format", "jsonl", "run", natsScript(t, dir, "readings.csv", ""))
	if code != exitOK {
		t.Fatalf("file run: exit %d: %s", code, errs)
	}
	// The CLI prints timestamps as DuckDB does; a JSON message on NATS
	// carries them as RFC 3339 (the wire format other programs parse).
	want = regexp.MustCompile(`"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d(\.\d+)?)"`).ReplaceAllString(want, `"${1}T${2}Z"`)
	wantLines := sortedLines(want)
	if len(wantLines) < 5 {
		t.Fatalf("file run printed %d rows", len(wantLines))
	}
	srv, err := natsserver.Start(natsserver.Options{JetStream: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	url := srv.ClientURL()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	readings := filepath.Join("..", "..", "examples", "streaming", "readings.csv")

	for _, tc := range []struct {
		name, source, sink, pubFormat string
		pubArgs                       []string
	}{
		{"nats", "NATS 'e2e.readings' FORMAT CSV", "NATS 'e2e.stats' FORMAT JSON", "csv", nil},
		{"jetstream", "JETSTREAM 'e2e.js.readings' FORMAT ARROW", "JETSTREAM 'e2e.js.stats' FORMAT JSON", "arrow", []string{"--jetstream", "E2E_READINGS", "--batch", "100"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outSubject := strings.Split(tc.sink, "'")[1]
			inSubject := strings.Split(tc.source, "'")[1]
			sub, err := nc.SubscribeSync(outSubject)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			nc.Flush()
			if tc.name == "jetstream" {
				// The stream exists before the query starts, so the run
				// replays it from the start.
				args := append([]string{"--nats", url, "--format", tc.pubFormat, "publish"}, tc.pubArgs...)
				if code, _, errs := runCLI(t, "", append(args, readings, inSubject)...); code != exitOK {
					t.Fatalf("publish: exit %d: %s", code, errs)
				}
			}
			type result struct {
				code      int
				out, errs string
			}
			done := make(chan result, 1)
			script := natsScript(t, dir, tc.source, tc.sink)
			go func() {
				code, out, errs := runCLI(t, "", "--nats", url, "run", script)
				done <- result{code, out, errs}
			}()
			if tc.name == "nats" {
				// Core NATS keeps nothing: publish once the query listens.
				waitFor(t, 10*time.Second, "the query's subscription", func() bool {
					return srv.NATS().GlobalAccount().SubscriptionInterest(inSubject)
				})
				args := append([]string{"--nats", url, "--format", tc.pubFormat, "--rate", "20000", "publish"}, tc.pubArgs...)
				code, _, errs := runCLI(t, "", append(args, readings, inSubject)...)
				if code != exitOK || !strings.Contains(errs, "published 1200 rows as 1200 messages") {
					t.Fatalf("publish: exit %d: %s", code, errs)
				}
			}
			var res result
			select {
			case res = <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("run did not end after the end-of-stream marker")
			}
			if res.code != exitOK || !strings.Contains(res.errs, "1206 rows read") {
				t.Fatalf("run: exit %d: %s", res.code, res.errs)
			}
			var got []string
			for {
				m, err := sub.NextMsg(5 * time.Second)
				if err != nil {
					t.Fatalf("after %d results: %v", len(got), err)
				}
				if m.Header.Get(connectors.EndHeader) != "" {
					break
				}
				got = append(got, string(m.Data))
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(wantLines, "\n") {
				t.Fatalf("results over NATS differ from the file run:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
			}
		})
	}
}

func sortedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func TestPublishBadInput(t *testing.T) {
	readings := filepath.Join("..", "..", "examples", "streaming", "readings.csv")
	if code, _, errs := runCLI(t, "", "publish", readings, "x"); code != exitBadInput || !strings.Contains(errs, "--nats") {
		t.Fatalf("no --nats: exit %d: %s", code, errs)
	}
	srv := clustertest.NATSServer(t)
	if code, _, errs := runCLI(t, "", "--nats", srv.ClientURL(), "--format", "xml", "publish", readings, "x"); code != exitBadInput || !strings.Contains(errs, "--format xml") {
		t.Fatalf("bad format: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, "", "--nats", srv.ClientURL(), "publish", "no-such.csv", "x"); code != exitBadInput {
		t.Fatalf("missing file: exit %d: %s", code, errs)
	}
}

// TestPublishPacesRows: --rate holds publishing to the rate (checked as a
// lower bound on the time taken, which a slow machine cannot break).
func TestPublishPacesRows(t *testing.T) {
	srv := clustertest.NATSServer(t)
	readings := filepath.Join("..", "..", "examples", "streaming", "readings.csv")
	start := time.Now()
	code, _, errs := runCLI(t, "", "--nats", srv.ClientURL(), "publish", "--rate", "4000", "--progress", "100ms", readings, "paced")
	took := time.Since(start)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if took < 250*time.Millisecond {
		t.Fatalf("1200 rows at 4000/s took %s", took)
	}
	if !strings.Contains(errs, "-- publishing: ") || !strings.Contains(errs, "-- published 1200 rows as 1200 messages") {
		t.Fatalf("progress lines:\n%s", errs)
	}
}

// TestPublishTakesTheFormatFromTheExtension: without --format, a .csv file
// goes out as CSV messages and a .jsonl file as JSON (every file went out
// as JSON), and stderr says which; --format still chooses.
func TestPublishTakesTheFormatFromTheExtension(t *testing.T) {
	srv := clustertest.NATSServer(t)
	nc := clustertest.Connect(t, srv)
	dir := t.TempDir()
	csvFile := filepath.Join(dir, "r.csv")
	jsonFile := filepath.Join(dir, "r.jsonl")
	os.WriteFile(csvFile, []byte("k,name\n1,a\n"), 0o644)
	os.WriteFile(jsonFile, []byte(`{"k":1,"name":"a"}`+"\n"), 0o644)
	for _, tc := range []struct {
		file    string
		args    []string
		want    string
		summary string
	}{
		{csvFile, nil, "1,a\n", "as csv messages (the file's extension)"},
		{jsonFile, nil, `{"k":1,"name":"a"}`, "as json messages (the file's extension)"},
		{csvFile, []string{"--format", "json"}, `{"k":1,"name":"a"}`, "as json messages (--format)"},
	} {
		sub, err := nc.SubscribeSync("fmt.test")
		if err != nil {
			t.Fatal(err)
		}
		nc.Flush()
		args := append(append([]string{"--nats", srv.ClientURL()}, tc.args...), "publish", "--no-end", tc.file, "fmt.test")
		code, _, errs := runCLI(t, "", args...)
		if code != exitOK || !strings.Contains(errs, tc.summary) {
			t.Errorf("%v: exit %d, want the summary %q:\n%s", args, code, tc.summary, errs)
		}
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil || strings.TrimSpace(string(m.Data)) != strings.TrimSpace(tc.want) {
			t.Errorf("%v: message %q (%v), want %q", args, m.Data, err, tc.want)
		}
		sub.Unsubscribe()
	}
}
