package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/tierflow/tierflow/runtime/cluster/clustertest"
)

// natsExamples are the examples over a core NATS stream: their comments
// document only `explain` (run waits for what nothing publishes), so
// TestNATSExamplesRun runs each on the embedded cluster over a NATS server
// of the test and publishes the stream's rows with `tierflow publish` once
// the query listens; want is what the run prints when every row of the
// file went through.
var natsExamples = []struct {
	file string
	pubs []natsPub
	want *regexp.Regexp
}{
	// INSERT INTO alerts (a stdout sink, JSON lines): the confident ones.
	{"examples/fashion/query.sql", []natsPub{{"examples/fashion/data/shelf.arrow", "store.frames"}},
		regexp.MustCompile(`(?m)^-- 2000 rows read, \d+ rows written`)},
	// A label per image, as a table.
	{"examples/fashion/dataaware.sql", []natsPub{{"examples/fashion/data/shelf.arrow", "store.frames"}},
		regexp.MustCompile(`\(2000 rows\)`)},
	// The imported VQA workflow on its BLOB columns (examples/vqa/vqa.go):
	// an answer per request, from its image and its speech, as the
	// planner's variants give them (on infra.yaml's embedded cluster) or
	// the most accurate ones (setups/vqa.sql's catalog has no infra.yaml
	// beside it: in one process).
	{"examples/vqa/query.sql", vqaPubs, vqaAnswers},
	{"examples/vqa/budget.sql", vqaPubs, vqaAnswers},
	{"examples/setups/vqa.sql", vqaPubs, vqaAnswers},
}

// natsPub is a file published on a subject.
type natsPub struct{ data, subject string }

var (
	vqaPubs    = []natsPub{{"examples/vqa/data/images.arrow", "readimage"}, {"examples/vqa/data/speech.arrow", "readspeech"}}
	vqaAnswers = regexp.MustCompile(`\(96 rows\)`)
)

// TestNATSExamplesRun: the examples that read a core NATS stream run to
// the end of what is published on their subject, with exit 0.
func TestNATSExamplesRun(t *testing.T) {
	root := "../.."
	for _, ex := range natsExamples {
		t.Run(ex.file, func(t *testing.T) {
			srv := clustertest.NATSServer(t)
			url := srv.ClientURL()
			type result struct {
				code     int
				out, err string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errs := runCLI(t, "", "run", "--nats", url, filepath.Join(root, ex.file))
				done <- result{code, out, errs}
			}()
			// Core NATS keeps nothing for a subscriber that comes later:
			// publish once the query's source listens on the subject.
			acc := srv.NATS().GlobalAccount()
			clustertest.CheckFor(t, time.Minute, 20*time.Millisecond, func() error {
				select {
				case r := <-done:
					done <- r
					return fmt.Errorf("run ended before it listened on %v: exit %d\n%s", ex.pubs, r.code, r.err)
				default:
				}
				for _, p := range ex.pubs {
					if !acc.SubscriptionInterest(p.subject) {
						return fmt.Errorf("nothing listens on %s yet", p.subject)
					}
				}
				return nil
			})
			for _, p := range ex.pubs {
				if code, _, errs := runCLI(t, "", "publish", "--nats", url, filepath.Join(root, p.data), p.subject); code != exitOK {
					t.Fatalf("publish %s: exit %d\n%s", p.data, code, errs)
				}
			}
			select {
			case r := <-done:
				if r.code != exitOK || !ex.want.MatchString(r.out+r.err) {
					t.Fatalf("tierflow run %s: exit %d, want 0 and %q\n%s\n%s", ex.file, r.code, ex.want, tail([]byte(r.out), 2000), r.err)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("tierflow run %s did not end after the end-of-stream marker", ex.file)
			}
		})
	}
}
