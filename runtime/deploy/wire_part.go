package deploy

import "time"

// Part is what a worker tells a restarted coordinator about a query it
// runs a part of: enough to know the query again (SHOW QUERIES, stop, the
// epochs its sinks commit) and to recover it if a worker is lost: the
// deployment the worker built (script, placement, generation, results
// subject, owner) and whether it was started.
type Part struct {
	Query      string    `json:"query"`
	Owner      string    `json:"owner"`
	Submitted  time.Time `json:"submitted,omitzero"`
	Generation int       `json:"generation,omitempty"`
	Results    string    `json:"results"`
	Script     Script    `json:"script"`
	Placement  Placement `json:"placement"`
	Started    bool      `json:"started"`
}
