package security

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// ErrSubject: a query named a NATS subject it may not read or write (one
// of the engine's own, one that reaches them through a wildcard, or one
// its owner was not granted).
var ErrSubject = errors.New("subject not allowed")

// CheckSubject says whether a query with access a (its owner's) may read (publish false:
// a stream's subject, wildcards allowed) or write (publish true: a sink's,
// a literal subject) subject. Whatever a grants, the engine's own
// namespaces are never a source or a sink (EngineSubject), nor is a
// subject whose first token is a wildcard, which would reach them.
func CheckSubject(a deploy.Access, subject string, publish bool) error {
	if err := validSubject(subject, publish); err != nil {
		return fmt.Errorf("%w: %q: %w", ErrSubject, subject, err)
	}
	if why := EngineSubject(subject); why != "" {
		return fmt.Errorf("%w: %q %s; a query reads and writes data subjects only", ErrSubject, subject, why)
	}
	if !a.Restricted {
		return nil
	}
	for _, g := range a.Data {
		if SubjectWithin(subject, g) {
			return nil
		}
	}
	if len(a.Data) == 0 {
		return fmt.Errorf("%w: %q: the query's owner was granted no data subjects (nats-setup --client NAME --data 'sensors.>')", ErrSubject, subject)
	}
	return fmt.Errorf("%w: %q is outside the data subjects granted to the query's owner (%s)", ErrSubject, subject, strings.Join(a.Data, ", "))
}

// EngineSubject says why subject (or a subject it matches, through a
// wildcard) belongs to the engine or the server rather than to data, or
// "" when it does not. The rule is by class, not by list: the first token
// may not be a wildcard (it would match everything), "tierflow" (control,
// deployments, statuses, results, relay, in every namespace), nor begin
// with '$' ($SYS, $JS, $KV, $O, $SRV, $MQTT and whatever the server adds)
// or '_' (_INBOX and every user's _INBOX_<user>, _R_ service replies).
func EngineSubject(subject string) string {
	first, _, _ := strings.Cut(subject, ".")
	switch {
	case first == "*" || first == ">":
		return "starts with a wildcard, which reaches the engine's and the server's own subjects"
	case first == "tierflow":
		return "is under tierflow., the engine's own subjects (control, deployments, results, relay)"
	case strings.HasPrefix(first, "$"):
		return "is under " + first + ".: the server's own subjects (system, JetStream, KV and object store APIs)"
	case strings.HasPrefix(first, "_"):
		return "is under " + first + ".: inboxes and service replies"
	}
	return ""
}

// validSubject checks NATS subject syntax: non-empty tokens separated by
// '.', no white space or control characters, '*' and '>' only as whole
// tokens and '>' only last; a subject to publish on has no wildcard.
func validSubject(s string, publish bool) error {
	if s == "" {
		return errors.New("an empty subject")
	}
	if len(s) > 1024 {
		return fmt.Errorf("a subject of %d bytes (at most 1024)", len(s))
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		if t == "" {
			return errors.New("an empty token")
		}
		for _, r := range t {
			if r <= ' ' || r == 0x7f {
				return fmt.Errorf("white space or a control character in token %q", t)
			}
		}
		if (strings.ContainsAny(t, "*>")) && len(t) > 1 {
			return fmt.Errorf("a wildcard inside token %q", t)
		}
		if t == ">" && i != len(toks)-1 {
			return errors.New("'>' before the last token")
		}
		if publish && (t == "*" || t == ">") {
			return errors.New("a sink publishes on one subject, without wildcards")
		}
	}
	return nil
}

// SubjectWithin reports whether every subject that s matches is also
// matched by grant (both may hold wildcards): sensors.a.* is within
// sensors.>, sensors.> is not within sensors.*.
func SubjectWithin(s, grant string) bool {
	st, gt := strings.Split(s, "."), strings.Split(grant, ".")
	for i, g := range gt {
		if g == ">" {
			return i < len(st) // '>' matches one token or more
		}
		if i >= len(st) {
			return false
		}
		switch t := st[i]; {
		case g == "*":
			if t == ">" {
				return false
			}
		case t != g:
			return false
		}
	}
	return len(st) == len(gt)
}

// CheckCatalog checks the subject of every NATS and JetStream stream and
// sink of cat (a submitted script's, with its catalog file's) against a:
// a script may not even declare one it could not use. Errors are bad
// input and point at the declaration.
func CheckCatalog(cat *catalog.Catalog, a deploy.Access) error {
	for _, s := range cat.Streams {
		if isNATS(s.Source) {
			if err := CheckSubject(a, s.Subject, false); err != nil {
				return fmt.Errorf("%s%w: stream %s: %w", at(s.Pos), deploy.ErrInput, s.Name, err)
			}
		}
	}
	for _, s := range cat.Sinks {
		if isNATS(s.Kind) {
			if err := CheckSubject(a, s.Target, true); err != nil {
				return fmt.Errorf("%s%w: sink %s: %w", at(s.Pos), deploy.ErrInput, s.Name, err)
			}
		}
	}
	return nil
}

func isNATS(kind string) bool {
	return strings.EqualFold(kind, "nats") || strings.EqualFold(kind, "jetstream")
}

// at is a declaration's position as an error prefix ("" when unknown).
func at(p catalog.Pos) string {
	if p.Line == 0 {
		return ""
	}
	return p.String() + ": "
}
