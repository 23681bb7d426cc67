package main

import (
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/tierflow/tierflow/cmd/tierflow/repl"
	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
)

// TestReplCancelsARealStream drives the real REPL and executor (no test
// double) over a stream FROM NATS, which never ends on its own: rows print as
// the test publishes them, Ctrl-C cancels the query and returns to the prompt,
// and the next statement runs.
func TestReplCancelsARealStream(t *testing.T) {
	srv := clustertest.NATSServer(t)
	nc := clustertest.Connect(t, srv)

	setup := streamScript(t)
	tm, cmd := startTerm(t, "real", t.TempDir(), "repl", "--nats", srv.ClientURL())
	tm.expect(regexp.QuoteMeta(repl.Prompt))
	tm.send(`\i ` + setup + "\r")
	tm.expect(`CREATE TABLE sensors\r\n`)
	tm.send("CREATE STREAM live (sensor INT, ts TIMESTAMP, temperature DOUBLE) FROM NATS 'test.live' FORMAT JSON;\r")
	tm.expect(`CREATE STREAM live\r\n`)
	tm.send("SELECT sensor, temperature FROM live WHERE temperature > 0;\r")

	// Publish until the query has printed rows (a core NATS subscription sees
	// only what is published after it subscribed), bounded in count and time.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 500; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			msg := fmt.Sprintf(`{"sensor": 7, "ts": "2024-05-01 08:00:%02d", "temperature": 42.5}`, i%60)
			if err := nc.Publish("test.live", []byte(msg)); err != nil {
				return
			}
		}
	}()
	tm.expect(`7 \|\s+42\.5 \|\r\n`)
	close(stop)
	wg.Wait()

	tm.send("\x03")                        // Ctrl-C cancels the running query
	tm.expect(`Cancelled after \d+ rows?`) // one row, now that a quiet source emits within milliseconds
	tm.expect(regexp.QuoteMeta(repl.Prompt))
	tm.send("SELECT sensor FROM readings WHERE temperature < 21;\r")
	tm.expect(`-\+\r\n\|\s+1 \|\r\n`)
	tm.expect(`\(1 row\)`)
	tm.expect(regexp.QuoteMeta(repl.Prompt))
	tm.send(`\q` + "\r")
	waitExit(t, cmd)
}
