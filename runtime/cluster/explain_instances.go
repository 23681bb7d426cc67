package cluster

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tierflow/tierflow/internal/cli"
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/exec"
	"github.com/tierflow/tierflow/operators/session"
	"github.com/tierflow/tierflow/planner/physical"
	"github.com/tierflow/tierflow/runtime/deploy"
)

// Instances prints, after EXPLAIN's plan, where the coordinator would run
// each operator of the query on the workers registered now (it places the
// query as a submission would and deploys nothing): every instance's
// worker and what it takes of its input, so a partitioned operator shows
// its share: a partitioned stream's scan one file each, a keyed operator
// the keys whose hash falls to it (session.Placer).
//
// It returns, by the plan's stage, the workers the stage's instances run
// on, which EXPLAIN's plan then shows (a split join's stage on every
// worker of its instances, not the one the optimizer gave it).
func (e *scriptEngine) Instances(ctx context.Context, q session.Query, st *lang.Explain, w io.Writer) (map[string][]physical.Worker, error) {
	if q.Script == "" {
		return nil, nil // a statement of its own (the REPL's): nothing to submit
	}
	sc, err := e.script(q)
	if err != nil {
		return nil, err
	}
	sc.Source = asQuery(q.Script, st)
	p, note, err := e.c.Coordinator.Explain(ctx, sc, "")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "\nInstances on the cluster's %s (%s):\n", cli.Count(len(e.c.Coordinator.Workers()), "worker"), note)
	WriteInstances(w, p, func(scan string) []string { return partitionFiles(q, sc.BaseDir, scan) })
	registered := map[string]physical.Worker{}
	for _, r := range e.c.Coordinator.Workers() {
		registered[r.Name] = physical.Worker{Name: r.Name, Type: r.Type, Tier: r.Tier, Location: r.Location}
	}
	stages := map[string][]physical.Worker{}
	for stage, names := range p.StageWorkers() {
		for _, n := range names {
			w, ok := registered[n]
			if !ok {
				w = physical.Worker{Name: n}
			}
			stages[stage] = append(stages[stage], w)
		}
	}
	return stages, nil
}

// asQuery is script with EXPLAIN's own words before its query blanked out
// (newlines kept, so every position stays where it was): the script a
// submission of that query would send.
func asQuery(script string, st *lang.Explain) string {
	from, to := st.Pos.Offset, st.Target().Position().Offset
	if from < 0 || to > len(script) || from > to {
		return script
	}
	blank := []byte(script[from:to])
	for i, c := range blank {
		if c != '\n' {
			blank[i] = ' '
		}
	}
	return script[:from] + string(blank) + script[to:]
}

// partitionFiles is the files of stream scan's partitions, in the order
// of its instances, or nil for a stream of one partition (or not a file).
func partitionFiles(q session.Query, baseDir, scan string) []string {
	s := q.Catalog.Stream(strings.TrimPrefix(scan, "scan "))
	if s == nil || !strings.EqualFold(s.Source, "file") {
		return nil
	}
	files, err := exec.PartitionFiles(exec.ResolvePath(s.Subject, baseDir, s.Pos.File))
	if err != nil || len(files) < 2 {
		return nil
	}
	return files
}

// WriteInstances prints a placement as a table: one line per operator
// instance, its worker, and what it takes of its input: a partition (files
// gives a scan's, by name), the rows of the same instance before it, the
// keys whose hash of the exchange's columns falls to it, every row, or a
// share of the batches.
func WriteInstances(w io.Writer, p *deploy.Placement, files func(scan string) []string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "operator\tinstance\tworker\ttier\ttakes")
	for i, op := range p.Operators {
		var in []deploy.EdgePlan
		var from []string
		for _, e := range p.Edges {
			if e.To == i {
				in = append(in, e)
				from = append(from, fmt.Sprintf("%d %s", e.From, p.Operators[e.From].Name))
			}
		}
		var parts []string
		if strings.HasPrefix(op.Name, "scan ") && len(op.Workers) > 1 {
			parts = files(op.Name)
		}
		n := len(op.Workers)
		for k, wi := range op.Workers {
			var takes []string
			switch {
			case len(in) == 0 && k < len(parts):
				takes = append(takes, fmt.Sprintf("partition %d of %d: %s", k+1, n, filepath.Base(parts[k])))
			case len(in) == 0 && n > 1:
				takes = append(takes, fmt.Sprintf("partition %d of %d", k+1, n))
			case len(in) == 0:
				takes = append(takes, "the whole stream or table")
			}
			for j, e := range in {
				senders := len(p.Operators[e.From].Workers)
				switch e.Kind {
				case "exchange":
					takes = append(takes, fmt.Sprintf("from %s: the keys whose hash of %s mod %d is %d", from[j], keyNames(e), n, k))
				case "broadcast":
					takes = append(takes, fmt.Sprintf("from %s: every row", from[j]))
				case "balance":
					share := ""
					if k < len(e.Shares) {
						share = fmt.Sprintf(" (share %.2f)", e.Shares[k])
					}
					takes = append(takes, fmt.Sprintf("from %s: whole batches in turn%s", from[j], share))
				default:
					switch {
					case senders == n && n > 1:
						takes = append(takes, fmt.Sprintf("from %s: its instance %d's rows", from[j], k))
					case senders == 1:
						takes = append(takes, fmt.Sprintf("from %s: its rows", from[j]))
					default:
						takes = append(takes, fmt.Sprintf("from %s: all %d instances' rows", from[j], senders))
					}
				}
			}
			fmt.Fprintf(tw, "%d %s\t%d\t%s\t%s\t%s\n", i, op.Name, k, p.Workers[wi], op.Tier, strings.Join(takes, "; "))
		}
	}
	tw.Flush()
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// keyNames names an exchange's key columns: by name, as its sender's
// output calls them, or by index where the placement does not say.
func keyNames(e deploy.EdgePlan) string {
	if len(e.KeyNames) == len(e.Keys) && !slices.Contains(e.KeyNames, "") {
		return strings.Join(e.KeyNames, ", ")
	}
	return "input columns " + ints(e.Keys)
}
