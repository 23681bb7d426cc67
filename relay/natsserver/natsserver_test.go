package natsserver

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestStartPublishSubscribe(t *testing.T) {
	s, err := Start(Options{MaxPayload: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.MaxPayload(); got != 4096 {
		t.Fatalf("max payload %d, want 4096", got)
	}
	sub, err := nc.SubscribeSync("a.b")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("a.b", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(m.Data) != "hi" {
		t.Fatalf("got %v %v", m, err)
	}
}

func TestJetStream(t *testing.T) {
	dir := t.TempDir()
	s, err := Start(Options{JetStream: true, StoreDir: dir, Name: "js1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish("s.x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	info, err := js.StreamInfo("S")
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("stream info %+v %v", info, err)
	}
}

func TestDefaultsAndErrors(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.MaxPayload(); got != DefaultMaxPayload {
		t.Fatalf("default max payload %d, want %d", got, DefaultMaxPayload)
	}
	if _, err := Start(Options{JetStream: true}); !errors.Is(err, ErrStart) {
		t.Fatalf("JetStream without a store: %v, want ErrStart", err)
	}
	if _, err := Connect("nats://127.0.0.1:1", nats.Timeout(200*time.Millisecond), nats.NoReconnect()); err == nil {
		t.Fatalf("connect to a closed port succeeded")
	}
}
