package worker

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tierflow/tierflow/dataflow"
)

// An owner's relay connection reads as a step of the owner's query: what
// its reader does with the frames is charged to the query, and while the
// query leads another that has work, the reader waits at the query's turn
// (#25: a flooding query's reader held a one-processor worker ungated
// while another user's deployment waited to be read).
func TestRelayReadsAreTheOwnersSteps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the CPU share charges threads' CPU clocks, read on Linux")
	}
	srv, p := relayPool(t, time.Hour)
	cpu := dataflow.NewCPU(0)
	mallory, alice := cpu.Join("mallory"), cpu.Join("alice")
	defer mallory.Leave()
	defer alice.Leave()
	nc, release, err := p.acquire("mallory", mallory)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	const frames = 64
	got := make(chan struct{}, frames)
	if _, err := nc.Subscribe("flood", func(*nats.Msg) { got <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	pub, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	// Alice's step begins and waits (a query with work, level with
	// mallory), mallory steps ten slices of CPU ahead of her, and then
	// alice steps on until mallory's frames are all in.
	lead := 10 * cpu.Slice()
	spin, stop, stepped := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stepped)
		alice.Helper().Do(func() {
			<-spin
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}()
	defer func() { close(stop); <-stepped }()
	mallory.Helper().Do(func() {
		for mallory.Used() < lead {
		}
	})
	before := mallory.Stats()
	close(spin)
	frame := bytes.Repeat([]byte("x"), 64<<10)
	for range frames {
		if err := pub.Publish("flood", frame); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for range frames {
		select {
		case <-got:
		case <-timeout:
			t.Fatal("mallory's frames did not all arrive")
		}
	}
	after := mallory.Stats()
	if after.Used <= before.Used {
		t.Errorf("reading %d frames of 64 KiB charged mallory's query nothing (%s before, %s after)", frames, before.Used, after.Used)
	}
	if after.Waits == before.Waits {
		t.Errorf("mallory's reader never waited at her turn while she led alice's stepping query by %s", lead)
	}
}
