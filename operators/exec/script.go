package exec

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/sinks"
	"github.com/tierflow/tierflow/planner/bind"
	"github.com/tierflow/tierflow/planner/catalog"
	"github.com/tierflow/tierflow/planner/expr"
	"github.com/tierflow/tierflow/planner/logical"
)

// ScriptOptions configure RunScript.
type ScriptOptions struct {
	Options
	// Catalog to start from (nil: empty); CREATE statements add to it.
	Catalog *catalog.Catalog
	// NewOutput makes the writer for each SELECT's results (nil: a table on
	// Stdout).
	NewOutput func() (sinks.Writer, error)
	// Log receives per-query summaries (rows, late rows, bad rows); nil: none.
	Log io.Writer
	// Explain prints the plan of an EXPLAIN statement against the catalog
	// as the script has made it so far (the CLI plans it with the
	// optimizer); nil: EXPLAIN is an error.
	Explain func(e *lang.Explain, cat *catalog.Catalog) error
	// Plan, when set, plans each query before it runs and sets the options
	// that make it run the plan chosen (the model variants); its error (no
	// plan meets the objectives) stops the script. nil: every model call
	// runs what Lateral chooses.
	Plan func(ctx context.Context, bound *logical.Plan, cat *catalog.Catalog, o *Options) error
	// CheckModelArgs checks model calls against their files when queries
	// bind (bind.Binder.CheckModelArgs); nil: no such check.
	CheckModelArgs bind.ModelArgChecker
}

// RunScript runs a script's statements in order: CREATE/DROP change the
// catalog, queries run to completion (or until ctx ends), SHOW FUNCTIONS lists
// the function registry. The first failing statement stops the script.
func RunScript(ctx context.Context, filename, src string, so ScriptOptions) error {
	script, err := lang.Parse(filename, src)
	if err != nil {
		return err
	}
	cat := so.Catalog
	if cat == nil {
		cat = &catalog.Catalog{}
	}
	if so.BaseDir == "" {
		so.BaseDir = filepath.Dir(filename)
	}
	if cat.Files == nil {
		cat.Files = FileSchemas{BaseDir: so.BaseDir}
	}
	binder := bind.New(cat)
	binder.CheckModelArgs = so.CheckModelArgs
	for _, stmt := range script.Statements {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ok, err := bind.Apply(cat, stmt); ok {
			if err != nil {
				return err
			}
			continue
		}
		switch s := stmt.(type) {
		case *lang.Explain:
			if so.Explain == nil || s.Analyze {
				what := "EXPLAIN"
				if s.Analyze {
					what = "EXPLAIN ANALYZE"
				}
				return fmt.Errorf("%s: %w: %s in a script run here", s.Position(), ErrUnsupported, what)
			}
			if err := so.Explain(s, cat); err != nil {
				return err
			}
		case *lang.Show:
			if strings.EqualFold(string(s.What), "FUNCTIONS") {
				if err := ShowFunctions(so.Stdout, binder.Funcs); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("%s: SHOW %s is not available in `tierflow run`", s.Pos, s.What)
		case *lang.Query, *lang.Insert:
			plan, err := binder.Bind(stmt)
			if err != nil {
				return err
			}
			opts := so.Options
			if so.Plan != nil {
				if err := so.Plan(ctx, plan, cat, &opts); err != nil {
					return err
				}
			}
			if so.NewOutput != nil {
				w, err := so.NewOutput()
				if err != nil {
					return err
				}
				opts.Output = w
			}
			q, err := Build(plan, opts)
			if err != nil {
				return err
			}
			st, err := q.Run(ctx)
			if so.Log != nil {
				fmt.Fprintf(so.Log, "-- %d rows read, %d rows written", st.RowsRead, st.RowsWritten)
				if len(st.Dropped) > 0 {
					fmt.Fprintf(so.Log, ", dropped: %s", st.Dropped)
				}
				fmt.Fprintln(so.Log)
				for _, p := range st.Problems {
					fmt.Fprintf(so.Log, "--   %s\n", p)
				}
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: %T statements are not run by `tierflow run`", stmt.Position(), stmt)
		}
	}
	return nil
}

// ShowFunctions prints the function registry: name, kind, signatures and doc.
func ShowFunctions(w io.Writer, reg *expr.Registry) error {
	if reg == nil {
		reg = expr.Builtins()
	}
	for _, f := range reg.Functions() {
		var sigs []string
		for _, s := range f.Signatures {
			sigs = append(sigs, s.String(f.Name))
		}
		op := ""
		if f.Operator != "" {
			op = "  (operator " + f.Operator + ")"
		}
		if _, err := fmt.Fprintf(w, "%s  [%s]%s\n    %s\n    %s\n", f.Name, f.Kind, op, strings.Join(sigs, "\n    "), f.Doc); err != nil {
			return err
		}
		for _, ex := range f.Examples {
			fmt.Fprintf(w, "    e.g. %s\n", f.ExampleString(ex))
		}
	}
	return nil
}
