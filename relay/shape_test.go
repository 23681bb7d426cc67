package relay_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/relay"
)

func TestParseTraceRejectsBadFilesAtTheLine(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"", "x.csv:1: "},
		{"t,kbit\n0,1\n", "x.csv:1: "},
		{"t_s,kbit_s\n", "x.csv:1: "},
		{"t_s,kbit_s\n0,800\n5\n", "x.csv:3: "},
		{"t_s,kbit_s\n0,800\n5,-1\n", "x.csv:3: "},
		{"t_s,kbit_s\n0,800\nfive,300\n", "x.csv:3: "},
		{"t_s,kbit_s\n1,800\n", "x.csv:2: "},
		{"t_s,kbit_s\n0,800\n5,600\n5,300\n", "x.csv:4: "},
		{"t_s,kbit_s\n0,800\n\n# a comment\n3,NaN\n", "x.csv:5: "},
	} {
		_, err := relay.ParseTrace("x.csv", strings.NewReader(c.src))
		if !errors.Is(err, relay.ErrBadTrace) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want relay.ErrBadTrace at %q", c.src, err, c.want)
		}
	}
}

func TestTraceStepsAndLoops(t *testing.T) {
	tr, err := relay.ParseTrace("x.csv", strings.NewReader("t_s,kbit_s\n0,800\n5,600\n10,300\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Period != 15*time.Second {
		t.Fatalf("period %v, want 15s (the last step as long as the mean one)", tr.Period)
	}
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{0, 800}, {4900 * time.Millisecond, 800}, {5 * time.Second, 600}, {12 * time.Second, 300}, {15 * time.Second, 800}, {26 * time.Second, 300}} {
		if got := tr.KbitAt(c.at); got != c.want {
			t.Errorf("at %v: %v kbit/s, want %v", c.at, got, c.want)
		}
	}
	start := time.Unix(1000, 0)
	sh := relay.TraceShaper{Trace: tr, Start: start, Offset: 5 * time.Second}
	if got := sh.BytesPerSecond(start); got != 600*1000/8 {
		t.Fatalf("shifted by 5s: %v B/s, want the 600 kbit/s step", got)
	}
}

func TestTransferEndIntegratesTheTrace(t *testing.T) {
	tr, err := relay.ParseTrace("x.csv", strings.NewReader("t_s,kbit_s\n0,800\n1,80\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1000, 0)
	sh := relay.TraceShaper{Trace: tr, Start: start}
	// 10 KB at 100 KB/s: 100 ms.
	if d := relay.TransferEnd(sh, start, 10_000).Sub(start); d != 100*time.Millisecond {
		t.Fatalf("10 KB at 800 kbit/s took %v, want 100ms", d)
	}
	// 10 KB starting 0.95 s in: 5 KB in the last 50 ms at 100 KB/s, the
	// other 5 KB at 10 KB/s (the drop): 0.5 s more.
	from := start.Add(950 * time.Millisecond)
	if d := relay.TransferEnd(sh, from, 10_000).Sub(from); d < 540*time.Millisecond || d > 560*time.Millisecond {
		t.Fatalf("10 KB across the drop took %v, want 550ms", d)
	}
}
