package coordinator

import (
	"context"

	"github.com/tierflow/tierflow/relay/natsserver"
	"github.com/tierflow/tierflow/runtime/control"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// Explain places a script's query on the registered workers as Submit
// would, and deploys nothing: EXPLAIN on a cluster shows where each
// operator's instances would run (which worker, which partition of a
// stream, which keys of an exchange) with the note on how it was placed.
// Like a submission it creates the JetStream streams the query reads.
func (c *Coordinator) Explain(ctx context.Context, script deploy.Script, owner string) (*deploy.Placement, string, error) {
	if owner == "" {
		owner = natsserver.Anonymous
	}
	if script.Catalog == "" {
		script.Catalog = c.cfg.Catalog
	}
	var ws []deploy.Worker
	for _, w := range c.Workers() {
		ws = append(ws, deploy.Worker{Name: w.Name, Tier: w.Tier, Location: w.Location, Type: w.Type, Threads: w.ModelThreads})
	}
	pl, err := c.place(ctx, deploy.SubmitRequest{Query: "explain", Script: script, Owner: owner}, ws, control.Constraints{})
	if err != nil {
		return nil, "", scrub(err, script)
	}
	return pl.placement, pl.note, nil
}
