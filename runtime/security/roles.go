// Package security holds what makes a tierflow cluster safe on a real
// network: the NATS subject permissions of each role on the control plane
// (coordinator, worker, client), the generation of a secure NATS setup
// (operator, accounts, users, creds files, server config, TLS: `tierflow
// nats-setup`), and the confinement of a worker's files to its data roots.
//
// The protocol's subjects are runtime/deploy's; this package says who may
// use which. security imports runtime/deploy and relay/natsserver; the
// worker and the CLI import it.
package security

import (
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/jwt/v2"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// Roles on the control plane.
const (
	RoleCoordinator = "coordinator"
	RoleWorker      = "worker"
	RoleClient      = "client"
)

// Perms are one user's subject permissions: publish and subscribe, each an
// allow list and a deny list (deny wins), and whether it may answer the
// requests it receives (the server then lets it publish to their reply
// subjects, and to no other inbox).
type Perms struct {
	PubAllow, PubDeny []string
	SubAllow, SubDeny []string
	Respond           bool
}

// anyNS is each tierflow subject of subjects both in the default namespace
// and in any other (deploy.InNamespace with "*" as the namespace token):
// `--namespace NS`, and the fresh namespace of every `tierflow run`, need
// the same permissions as the default namespace. Subjects outside
// tierflow's (data, inboxes, $SYS) are kept as they are. The wildcard
// cannot reach a default-namespace subject of another meaning because no
// query, user or namespace may be named ctl, q, u or relay
// (deploy.ValidName).
func anyNS(subjects ...string) []string {
	out := make([]string, 0, 2*len(subjects))
	for _, s := range subjects {
		out = append(out, s)
		if strings.HasPrefix(s, "tierflow.") {
			out = append(out, deploy.InNamespace("*", s))
		}
	}
	return out
}

// Coordinator may read the control requests, the workers' statuses and
// its own replies; publish deployments, starts and stops to workers, and
// done messages to clients; and answer requests. In any namespace. It may
// read (never write) the data subjects data (the workers'): while a
// recovery re-deploys a query that reads a core NATS stream, or after a
// NATS outage, it counts what the stream lost (dropped "disconnected").
//
// It makes the streams of queries' JetStream subjects (Coordinator.
// ensureStreams): find a stream by subject, read one's information,
// create one. A query part's data user may not (Authority.Mint).
func Coordinator(data []string) Perms {
	return Perms{
		PubAllow: append(anyNS(deploy.QuerySubject("", "*", ">"), "tierflow.u.>"),
			"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.CREATE.*"),
		SubAllow: append(append(anyNS("tierflow.ctl.>", deploy.QuerySubject("", "*", "status.*"), deploy.QuerySubject("", "*", "enough.*")),
			natsserver.InboxPrefix(RoleCoordinator)+".>"), data...),
		Respond: true,
	}
}

// Worker may register and heartbeat, report status, send and receive its
// relay links' frames, receive deployments, starts and stops, and read and write the data
// subjects of streams and sinks (data: subject patterns; ">" for any).
// Whatever data says, it may never publish a control request of a client
// or the coordinator (submit, stop, list, deploy, start, done), nor
// anything under a user's subjects (tierflow.u.>: a query's results go on
// the data user the coordinator mints for the part that holds the query's
// sink, Authority.Mint, so no worker can put rows into a user's results),
// nor read the control requests or a client's results: a worker cannot
// stop queries nor pose as the coordinator. All of it in any namespace.
//
// name binds the permissions to one worker name (creds of its own): it
// registers and heartbeats as that name only and receives only that name's
// deployments, so it cannot pose as another worker. "" is the shared worker
// role, which may use any name.
func Worker(name, identity string, data []string) Perms {
	bound := name
	if bound == "" {
		bound = "*"
	}
	// A relay subject starts with the name of the worker that publishes
	// on it, then the one that reads it (worker.go names both ends of
	// every link): a bound worker sends frames only as itself and reads
	// only the frames sent to it, of any query, never another pair's.
	relayPub, relaySub := "tierflow.relay.>", "tierflow.relay.>"
	if name != "" {
		relayPub, relaySub = "tierflow.relay."+name+".>", "tierflow.relay.*."+name+".>"
	}
	return Perms{
		PubAllow: append(anyNS(deploy.RegisterSubject(bound), deploy.HeartbeatSubject(bound), deploy.QuerySubject("", "*", "status."+bound),
			deploy.QuerySubject("", "*", "enough."+bound), relayPub), data...),
		PubDeny: anyNS(deploy.SubmitSubject(">"), deploy.StopSubject(">"), deploy.ResumeSubject(">"), deploy.SubjectWorkers, deploy.WorkersSubject(">"), deploy.QueriesSubject(">"), deploy.SubjectQuery,
			deploy.QuerySubject("", "*", "deploy.>"), deploy.QuerySubject("", "*", "start"), deploy.QuerySubject("", "*", "stop"),
			"tierflow.u.>", "$SYS.>"),
		SubAllow: append(append(anyNS(deploy.DeploySubject("", "*", bound), deploy.QuerySubject("", "*", "start"), deploy.QuerySubject("", "*", "stop"),
			relaySub), natsserver.InboxPrefix(identity)+".>"), data...),
		SubDeny: anyNS("tierflow.ctl.>", "tierflow.u.>", deploy.QuerySubject("", "*", "status.*"), deploy.QuerySubject("", "*", "enough.*"), "$SYS.>"),
		Respond: true,
	}
}

// Client is user's permissions: submit and stop its own queries, list
// workers and queries, read its own replies and its own queries' results
// and nothing else of tierflow's, and publish and read the data subjects
// data (e.g. to feed streams with tierflow publish). In any namespace.
func Client(user string, data []string) (Perms, error) {
	if err := deploy.ValidName("user", user); err != nil {
		return Perms{}, err
	}
	if err := CheckDataSubjects(data); err != nil {
		return Perms{}, err
	}
	return Perms{
		PubAllow: append(anyNS(deploy.SubmitSubject(user), deploy.StopSubject(user), deploy.ResumeSubject(user), deploy.SubjectWorkers, deploy.WorkersSubject(user), deploy.QueriesSubject(user), deploy.SubjectQuery), data...),
		SubAllow: append(append([]string{natsserver.InboxPrefix(user) + ".>"}, anyNS("tierflow.u."+user+".>")...), data...),
	}, nil
}

// CheckDataSubjects refuses data subjects that would reach tierflow's own
// subjects, the server's or other users' inboxes (">", "*.>", "tierflow.>",
// "_INBOX...", "$JS.>": EngineSubject): the data subjects of a client, or
// of a worker bound to its name, must be the streams' own (NATS
// permissions cannot allow ">" but another worker's name).
func CheckDataSubjects(data []string) error {
	for _, d := range data {
		if err := validSubject(d, false); err != nil {
			return fmt.Errorf("data subject %q: %w", d, err)
		}
		if why := EngineSubject(d); why != "" {
			return fmt.Errorf("data subject %q %s: name the streams' subjects (e.g. sensors.>)", d, why)
		}
	}
	return nil
}

// Leaf is the user a hub or edge server's leaf connection authenticates
// as: it relays every subject of the account between the servers (what
// each user of either side may do is still its own permissions').
func Leaf() Perms {
	return Perms{PubAllow: []string{">"}, SubAllow: []string{">"}}
}

// BoundWorker is the worker name a creds file's user is bound to (its
// permissions let it register as that name only), or "" for any other
// creds: `tierflow worker --nats-creds e1.creds` is worker e1 by default.
func BoundWorker(creds string) string {
	b, err := os.ReadFile(creds)
	if err != nil {
		return ""
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return ""
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil || deploy.ValidName("worker", uc.Name) != nil {
		return ""
	}
	if uc.Pub.Allow.Contains(deploy.RegisterSubject(uc.Name)) && !uc.Pub.Allow.Contains(deploy.RegisterSubject("*")) {
		return uc.Name
	}
	return ""
}

// MayPublishResults reports whether the user of a creds file may publish
// a query's results itself: false for nats-setup's worker creds (only the
// data user minted for a query's part may), true for any other file,
// including one this cannot read (the server then decides).
func MayPublishResults(creds string) bool {
	b, err := os.ReadFile(creds)
	if err != nil {
		return true
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return true
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil || !uc.Pub.Allow.Contains(deploy.HeartbeatSubject(uc.Name)) && !uc.Pub.Allow.Contains(deploy.HeartbeatSubject("*")) {
		return true // not a worker's creds
	}
	results := deploy.UserSubject("*", "*", "results")
	return !uc.Pub.Deny.Contains("tierflow.u.>") && (uc.Pub.Allow.Contains(results) || uc.Pub.Allow.Contains(">"))
}
