package worker

import "github.com/tierflow/tierflow/runtime/deploy"

// parts describes the queries ids that this worker runs parts of, for a
// restarted coordinator that asked about them (deploy.Ack.Describe).
func (w *Worker) parts(ids []string) []deploy.Part {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []deploy.Part
	for _, id := range ids {
		q := w.queries[id]
		if q == nil {
			continue
		}
		r := q.req
		out = append(out, deploy.Part{Query: id, Owner: r.Owner, Submitted: r.Submitted, Generation: q.gen, Results: r.Results,
			Script: r.Script, Placement: r.Placement, Started: q.started})
	}
	return out
}
