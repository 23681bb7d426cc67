package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/runtime/connectors"
	"github.com/tierflow/tierflow/runtime/deploy"
	"github.com/tierflow/tierflow/runtime/security"
)

// access is the authority user's queries act with on data subjects: its
// grants when the coordinator has an authority file, any data subject (none
// of the engine's) otherwise.
func (c *Coordinator) access(user string) deploy.Access {
	if a := c.authority.Load(); a != nil {
		return a.Access(user)
	}
	return deploy.Access{}
}

// isAdmin reports whether user may stop, resume and list anyone's query.
func (c *Coordinator) isAdmin(user string) bool {
	return slices.Contains(c.cfg.Admins, user) || slices.Contains(c.authority.Load().Admins(), user)
}

// known refuses a submission from a user the authority file does not name
// (revoked, until the servers reload).
func (c *Coordinator) known(user string) error {
	if a := c.authority.Load(); a != nil && !a.Knows(user) {
		return fmt.Errorf("%w: user %s is not in the coordinator's authority file", ErrDenied, user)
	}
	return nil
}

// SetAuthority replaces the authority file the coordinator acts on (a
// reload after nats-setup revoke): the queries of users it no longer names
// are stopped at once.
func (c *Coordinator) SetAuthority(a *security.Authority) {
	c.authority.Store(a)
	if a == nil {
		return
	}
	var gone []string
	for _, s := range c.supervisors() {
		if !s.isEnded() && !a.Knows(s.req.Owner) {
			gone = append(gone, s.id)
		}
	}
	for _, id := range gone {
		c.cfg.Log.Warn("stopping the query of a revoked user", "query", id)
		_ = c.Stop(id, true)
	}
}

// mint is the JWT of the data user of worker's part of query: the owner's
// data subjects and nothing else (security.Authority.Mint). "" without an
// authority file: the worker then uses its own connection, still checking
// every subject. results is the query's results subject when the part
// holds a sink instance (its data user alone may publish there), else "";
// gen the deployment the part is of (its consumers' names carry it).
func (c *Coordinator) mint(query, owner, worker, results string, gen int) (string, error) {
	a := c.authority.Load()
	if a == nil {
		return "", nil
	}
	c.mu.Lock()
	key := ""
	if w := c.workers[worker]; w != nil {
		key = w.DataKey
	}
	s := c.queries[query]
	c.mu.Unlock()
	var js []string
	var streams map[string]string
	if s != nil {
		s.mu.Lock()
		js, streams = s.jetstream, s.streams
		s.mu.Unlock()
	}
	return a.Mint(security.MintRequest{Query: query, Worker: worker, Owner: owner, Key: key,
		JetStream: js, Streams: streams, Expires: c.cfg.Limits.RunTime, Results: results, Generation: gen})
}

// jetStreamSubjects are the subjects of cat's JetStream streams and sinks.
func jetStreamSubjects(cat *catalog.Catalog) []string {
	var out []string
	for _, s := range cat.Streams {
		if strings.EqualFold(s.Source, "jetstream") {
			out = append(out, s.Subject)
		}
	}
	for _, s := range cat.Sinks {
		if strings.EqualFold(s.Kind, "jetstream") {
			out = append(out, s.Target)
		}
	}
	return out
}

// ensureStreams makes the streams of a query's JetStream subjects (each
// over its subject alone) when the coordinator mints data users: their
// data users may not create streams, since a stream's configuration (its
// subjects, sources, republishing) is in the request's body, where no
// NATS permission reaches: one over tierflow.> republished onto a data
// subject would read, and republishing could write, every subject of the
// account. The coordinator builds the configuration itself from subjects
// already checked against the owner's grants.
//
// It returns the stream each subject is in: the parts' data users may
// read those streams' information (and are told their names) but may not
// list the account's streams.
//
// A stream it makes is owner's and bounded (Limits.StreamBytes and
// StreamsPerUser): no user's queries can fill the store everyone's streams
// share. One submission at a time counts and makes, so that two of one
// user's at once cannot both take the last stream.
func (c *Coordinator) ensureStreams(owner string, subjects []string) (map[string]string, error) {
	if c.authority.Load() == nil || len(subjects) == 0 {
		return nil, nil
	}
	c.streamsMu.Lock()
	defer c.streamsMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bound := connectors.StreamBound{Owner: owner, MaxBytes: c.cfg.Limits.StreamBytes, Most: c.cfg.Limits.StreamsPerUser}
	streams := map[string]string{}
	for _, s := range subjects {
		name, err := connectors.EnsureStream(ctx, c.nc, s, bound)
		if errors.Is(err, connectors.ErrStreamQuota) {
			return nil, fmt.Errorf("%w: JetStream subject %q: %w (--max-streams-per-user)", deploy.ErrLimit, s, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: JetStream subject %q: %w", deploy.ErrInput, s, err)
		}
		streams[s] = name
	}
	return streams, nil
}

// checkDataKey refuses a worker that cannot hold a query's data user when
// the coordinator mints them.
func (c *Coordinator) checkDataKey(wi deploy.WorkerInfo) error {
	if c.authority.Load() != nil && !nkeys.IsValidPublicUserKey(wi.DataKey) {
		return fmt.Errorf("worker %s has no data key: this coordinator gives every query part a data user of its owner's (--authority), and only a worker with a key can hold one", wi.Name)
	}
	return nil
}

// streamsOf is the stream each of query's JetStream subjects is in.
func (c *Coordinator) streamsOf(query string) map[string]string {
	s := c.supervisor(query)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams
}
