package cluster

import (
	"testing"

	"github.com/tierflow/tierflow/relay/natsserver"
)

// Worker processes get credentials by flag and environment, never in the
// URL on their command line.
func TestSplitCredentials(t *testing.T) {
	url, a := splitCredentials("nats://alice:s3cret@h1:4222,nats://h2:4222", natsserver.Auth{})
	if url != "nats://h1:4222,nats://h2:4222" || a.User != "alice" || a.Password != "s3cret" {
		t.Fatalf("got %s %+v", url, a)
	}
	args := authArgs(a)
	for _, s := range args {
		if s == "s3cret" {
			t.Fatalf("password in the worker's arguments: %v", args)
		}
	}
	url, a = splitCredentials("nats://alice:s3cret@h1:4222", natsserver.Auth{Creds: "x.creds"})
	if url != "nats://h1:4222" || a.User != "" || a.Creds != "x.creds" {
		t.Fatalf("with creds given: %s %+v", url, a)
	}
}
