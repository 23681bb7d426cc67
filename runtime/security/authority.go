package security

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// ErrAuthority: an authority file that cannot be used (missing, readable by
// others, malformed), or a user it does not know.
var ErrAuthority = errors.New("authority")

// Authority is what the coordinator knows of a secure cluster's users
// beyond what NATS enforces (nats-setup writes it as authority.json): each
// client's data subjects and whether it is an admin, and a signing key of
// the cluster's account with which it mints, for each part of a query, a
// NATS user that may use exactly its owner's data subjects (Mint). The
// file holds a secret (the signing key): it must be readable by its owner
// only.
type Authority struct {
	Account string           `json:"account"`
	Signer  string           `json:"signer"`
	Users   map[string]Grant `json:"users"`
}

// Grant is one client's standing: the data subjects it (and so its
// queries) may read and write, and whether it may stop anyone's query.
type Grant struct {
	Data  []string `json:"data,omitempty"`
	Admin bool     `json:"admin,omitempty"`
}

// Save writes a to path (0600), replacing it atomically.
func (a *Authority) Save(path string) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// LoadAuthority reads an authority file. It refuses a file that anyone but
// its owner may read (it holds a signing key), and one whose key is not an
// account signing key or whose grants reach the engine's subjects.
func LoadAuthority(path string) (*Authority, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthority, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s is readable by others (mode %04o): it holds a signing key; chmod 600 it", ErrAuthority, path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthority, err)
	}
	var a Authority
	if err := json.Unmarshal(b, &a); err != nil {
		// The decoder's message never quotes the file: it holds a key.
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%w: %s: not JSON (at byte %d)", ErrAuthority, path, se.Offset)
		}
		return nil, fmt.Errorf("%w: %s: not an authority file written by tierflow nats-setup", ErrAuthority, path)
	}
	if !nkeys.IsValidPublicAccountKey(a.Account) {
		return nil, fmt.Errorf("%w: %s: no account public key", ErrAuthority, path)
	}
	kp, err := nkeys.FromSeed([]byte(a.Signer))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: the signing key is not an nkey seed", ErrAuthority, path)
	}
	if pub, _ := kp.PublicKey(); !nkeys.IsValidPublicAccountKey(pub) {
		return nil, fmt.Errorf("%w: %s: the signing key is not an account signing key", ErrAuthority, path)
	}
	for u, g := range a.Users {
		if err := deploy.ValidName("user", u); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrAuthority, path, err)
		}
		if err := CheckDataSubjects(g.Data); err != nil {
			return nil, fmt.Errorf("%w: %s: user %s: %w", ErrAuthority, path, u, err)
		}
	}
	return &a, nil
}

// Access is user's authority over data subjects: its grants, bounding it.
// A user the file does not name may use no data subject.
func (a *Authority) Access(user string) deploy.Access {
	if a == nil {
		return deploy.Access{}
	}
	return deploy.Access{Data: slices.Clone(a.Users[user].Data), Restricted: true}
}

// Knows reports whether user is one of the file's clients.
func (a *Authority) Knows(user string) bool {
	_, ok := a.Users[user]
	return ok
}

// Admins are the users that may stop anyone's query.
func (a *Authority) Admins() []string {
	if a == nil {
		return nil
	}
	var out []string
	for u, g := range a.Users {
		if g.Admin {
			out = append(out, u)
		}
	}
	sort.Strings(out)
	return out
}

// MintRequest is one part of a query that needs a data user.
type MintRequest struct {
	// Query, Worker and Owner name the part; Key is the worker's data key
	// (an nkey user public key whose seed only that worker holds).
	Query, Worker, Owner, Key string
	// JetStream are the subjects of the query's JetStream streams and
	// sinks: the data user may read the information of the stream each
	// is in (Streams; else the one the connectors name after it), and
	// make consumers (ConsumerName).
	JetStream []string
	// Streams names the stream each JetStream subject is in, as the
	// coordinator found or made it (deploy.Access.Streams).
	Streams map[string]string
	// Expires, when set, bounds the JWT (a query with a --max-query-time).
	Expires time.Duration
	// Generation is the query's deployment the part belongs to: its
	// consumers' names carry it (ConsumerName), so a part of the next
	// generation never shares the previous one's.
	Generation int
	// Results is the query's results subject when this part holds a sink
	// instance of the query's results ("" otherwise): only the data user
	// of such a part may publish there (no worker's creds may), so no
	// other query, worker or user can put rows into the owner's results.
	Results string
}

// Mint signs a NATS user JWT for r.Key that may use exactly r.Owner's data
// subjects: publish and subscribe on them; create consumers only with a
// filter inside them and only the part's own (ConsumerName); read its
// query's streams' information (never the list of the account's streams:
// their names are others' subjects), pull, ack and delete its own
// consumers; never create a stream (the coordinator does); and read
// replies on its own inbox (DataInbox). Nothing of the engine's, the
// server's or another user's inbox. The worker opens the part's streams and
// sinks on a connection of this user, so the server refuses whatever a
// missed check would have let through.
func (a *Authority) Mint(r MintRequest) (string, error) {
	if !nkeys.IsValidPublicUserKey(r.Key) {
		return "", fmt.Errorf("%w: worker %s has no data key", ErrAuthority, r.Worker)
	}
	g, ok := a.Users[r.Owner]
	if !ok {
		return "", fmt.Errorf("%w: user %s is not in the authority file", ErrAuthority, r.Owner)
	}
	kp, err := nkeys.FromSeed([]byte(a.Signer))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrAuthority, err)
	}
	uc := jwt.NewUserClaims(r.Key)
	uc.Name = "data-" + r.Owner + "-" + r.Query + "-" + r.Worker
	uc.IssuerAccount = a.Account
	inbox := DataInbox(r.Query, r.Worker)
	uc.Pub.Allow.Add(g.Data...)
	uc.Sub.Allow.Add(g.Data...)
	uc.Sub.Allow.Add(inbox + ".>")
	// JetStream: only the part's own consumers, by name, on any stream:
	// create one filtering inside the grants, pull from it, read and
	// delete it, ack its messages (the server's acks name stream and
	// consumer, in the old and the domain form). Another query's
	// consumers, even its owner's, are refused: their names carry their
	// query and worker. Not the list of streams: the part is told the
	// stream each subject is in (deploy.Access.Streams).
	uc.Pub.Allow.Add("$JS.API.INFO")
	if len(r.JetStream) > 0 && deploy.ValidName("query", r.Query) == nil && deploy.ValidName("worker", r.Worker) == nil {
		for i := range ConsumersPerSubject * len(r.JetStream) {
			c := ConsumerName(r.Query, r.Worker, r.Generation, i)
			uc.Pub.Allow.Add("$JS.API.CONSUMER.MSG.NEXT.*."+c, "$JS.API.CONSUMER.INFO.*."+c, "$JS.API.CONSUMER.DELETE.*."+c,
				"$JS.ACK.*."+c+".>", "$JS.ACK.*.*.*."+c+".>")
			for _, d := range g.Data {
				uc.Pub.Allow.Add("$JS.API.CONSUMER.CREATE.*." + c + "." + d)
			}
		}
	}
	// Stream information only on the streams the query's subjects name
	// (another's stream holds its subjects, sizes and sources). No stream
	// creation: its subjects, sources and republishing are in the body,
	// where no permission reaches (one over tierflow.> republished onto a
	// data subject reads every subject of the account); the coordinator
	// makes the query's streams before it deploys (one over each subject).
	for _, s := range r.JetStream {
		name := r.Streams[s]
		if name == "" {
			name = connectors.StreamName(s)
		}
		if name != "" && !strings.ContainsAny(name, ".*> ") {
			uc.Pub.Allow.Add("$JS.API.STREAM.INFO." + name)
		}
	}
	if r.Results != "" {
		if !resultsSubject(r.Results, r.Owner, r.Query) {
			return "", fmt.Errorf("%w: %q is not the results subject of query %s of %s", ErrAuthority, r.Results, r.Query, r.Owner)
		}
		uc.Pub.Allow.Add(r.Results)
	}
	// Whatever the grants say, never the engine's nor the system's. On
	// publish the engine's namespaces are denied one by one (a deny wins
	// over an allow, and the part's own results subject is allowed):
	// control, queries, relay, and what a query tells its owner but its
	// results.
	uc.Pub.Deny.Add(anyNS("tierflow.ctl.>", "tierflow.q.>", "tierflow.relay.>", deploy.UserSubject("*", "*", "done"))...)
	uc.Pub.Deny.Add("$SYS.>", "$KV.>", "$O.>", "_INBOX.>")
	uc.Sub.Deny.Add("tierflow.>", "$SYS.>", "$KV.>", "$O.>", "_INBOX.>")
	if r.Expires > 0 {
		uc.Expires = time.Now().Add(r.Expires).Unix()
	}
	return uc.Encode(kp)
}

// ConsumersPerSubject is how many consumers a query part may make per
// JetStream subject of its query (a source instance makes one; a part
// runs a few instances of a source at most).
const ConsumersPerSubject = 4

// ConsumerName is the name of the i-th JetStream consumer the part of
// query on worker makes in deployment gen: what its data user is minted
// to use (Mint), and the worker names its consumers (connectors'
// SourceConfig.ConsumerName).
func ConsumerName(query, worker string, gen, i int) string {
	return fmt.Sprintf("tf_%s_%s_g%d_%d", query, worker, gen, i)
}

// resultsSubject reports whether s is the results subject of owner's
// query (in any namespace): what a data user may be minted to publish.
func resultsSubject(s, owner, query string) bool {
	want := deploy.UserSubject(owner, query, "results")
	if s == want {
		return true
	}
	ns, ok := strings.CutPrefix(s, "tierflow.")
	if !ok {
		return false
	}
	ns, _, _ = strings.Cut(ns, ".")
	return deploy.ValidName("namespace", ns) == nil && s == deploy.InNamespace(ns, want)
}

// DataInbox is the inbox prefix of a query part's data connection. It is
// not of the _INBOX_<user> form, which a user of any name could read: no
// role's permissions reach _TFDATA, and no data grant may begin with '_'.
func DataInbox(query, worker string) string {
	return "_TFDATA." + query + "." + worker
}
