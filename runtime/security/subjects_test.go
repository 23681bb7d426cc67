package security_test

import (
	"errors"
	"testing"

	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/security"
)

func TestEngineSubjectsNeverData(t *testing.T) {
	// Every class of the engine's and the server's subjects, and the
	// wildcards that reach them, whatever the owner was granted.
	open := deploy.Access{}
	granted := deploy.Access{Restricted: true, Data: []string{"sensors.>"}}
	for _, s := range []string{
		"tierflow.ctl.register.evil", "tierflow.q.q1.enough.w1", "tierflow.relay.>", "tierflow.q.*.deploy.*",
		"tierflow.u.alice.q1.results", "tierflow.ns1.ctl.submit.bob", "tierflow.>", "tierflow",
		"_INBOX_alice.>", "_INBOX.abc", "_R_.x", "$SYS.>", "$JS.API.STREAM.CREATE.x", "$JS.API.>",
		"$KV.bucket.key", "$O.store.>", "$SRV.PING", "$JSC.>", "$MQTT.sess.>",
		">", "*.>", "*", "*.ctl.>", "*.relay.*",
	} {
		for _, a := range []deploy.Access{open, granted} {
			for _, pub := range []bool{false, true} {
				if err := security.CheckSubject(a, s, pub); !errors.Is(err, security.ErrSubject) {
					t.Errorf("%+v.CheckSubject(%q, publish %v) = %v, want security.ErrSubject", a, s, pub, err)
				}
			}
		}
	}
}

func TestSubjectGrants(t *testing.T) {
	a := deploy.Access{Restricted: true, Data: []string{"sensors.>", "alerts.*.out"}}
	for s, ok := range map[string]bool{
		"sensors.a": true, "sensors.a.b": true, "sensors.*": true, "sensors.>": true,
		"alerts.x.out": true, "alerts.*.out": true, "alerts.x.in": false, "alerts.>": false,
		"sensors": false, "other.a": false, "Sensors.a": false,
	} {
		if err := security.CheckSubject(a, s, false); (err == nil) != ok {
			t.Errorf("read %q: %v, want allowed %v", s, err, ok)
		}
	}
	if err := security.CheckSubject(a, "sensors.*", true); err == nil {
		t.Error("a sink on a wildcard subject was allowed")
	}
	none := deploy.Access{Restricted: true}
	if err := security.CheckSubject(none, "sensors.a", false); !errors.Is(err, security.ErrSubject) {
		t.Errorf("an owner with no grants read sensors.a: %v", err)
	}
	if err := security.CheckSubject(deploy.Access{}, "sensors.a", true); err != nil {
		t.Errorf("an open cluster refused sensors.a: %v", err)
	}
}

func TestSubjectSyntax(t *testing.T) {
	for _, s := range []string{"", "a..b", ".a", "a.", "a b", "a.b>", "a.>.b", "a.*x", "a\tb", "a.\x00"} {
		if err := security.CheckSubject(deploy.Access{}, s, false); !errors.Is(err, security.ErrSubject) {
			t.Errorf("security.CheckSubject(%q) = %v, want security.ErrSubject", s, err)
		}
	}
}

func TestSubjectWithin(t *testing.T) {
	for _, c := range []struct {
		s, g string
		want bool
	}{
		{"a.b", "a.>", true}, {"a", "a.>", false}, {"a.>", "a.*", false}, {"a.*", "a.*", true},
		{"a.*.c", "a.*.>", true}, {"a.b.c", "a.*.c", true}, {"a.b.c", "a.*", false}, {"a.b", "a.b", true},
		{"a.*", "a.b", false}, {"x.y", ">", true},
	} {
		if got := security.SubjectWithin(c.s, c.g); got != c.want {
			t.Errorf("security.SubjectWithin(%q, %q) = %v, want %v", c.s, c.g, got, c.want)
		}
	}
}
