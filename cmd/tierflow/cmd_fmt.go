package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/tierflow/tierflow/lang"
)

type fmtFlags struct {
	write bool // rewrite files in place
	check bool // only report files that are not canonical
}

func newFmtCmd(a *app) *cobra.Command {
	var f fmtFlags
	cmd := &cobra.Command{
		Use:   "fmt [FILE...]",
		Short: "Print queries in canonical form (and check their syntax)",
		Long: `fmt parses every FILE (standard input, named <stdin>, when there is none) and
prints each statement in canonical form: upper-case keywords, one clause per
line, stable spacing. Comments are kept, on the lines before their statement.

On a syntax error it prints FILE:LINE:COL: message, the offending line and a
caret under the column to standard error, and exits with status 2.`,
		Example: `  tierflow fmt examples/design/shelves.sql
  echo 'select a form t;' | tierflow fmt
  tierflow fmt -w examples/lang/*.sql      # rewrite the files in place
  tierflow fmt --check examples/*/*.sql    # list files not in canonical form`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.write && f.check {
				return badInput(errors.New("--write and --check exclude each other"))
			}
			if f.write && len(args) == 0 {
				return badInput(errors.New("--write needs files"))
			}
			return runFmt(a, f, args)
		},
	}
	cmd.Flags().BoolVarP(&f.write, "write", "w", false, "write the canonical form back to each FILE")
	cmd.Flags().BoolVar(&f.check, "check", false, "print the names of files not in canonical form and exit 1 if there are any")
	return cmd
}

func runFmt(a *app, f fmtFlags, files []string) error {
	type input struct{ name, src string }
	var inputs []input
	if len(files) == 0 {
		b, err := readStdinScript(a)
		if err != nil {
			return err
		}
		inputs = append(inputs, input{"<stdin>", string(b)})
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return badInput(err)
		}
		inputs = append(inputs, input{name, string(b)})
	}
	bad, unformatted := false, false
	first := true
	for _, in := range inputs {
		s, err := lang.Parse(in.name, in.src)
		if err != nil {
			bad = true
			var pe *lang.Error
			if errors.As(err, &pe) {
				fmt.Fprintln(a.err, pe.Pretty())
			} else {
				fmt.Fprintln(a.err, err)
			}
			continue
		}
		out := lang.Format(s)
		switch {
		case f.check:
			if out != in.src {
				unformatted = true
				fmt.Fprintln(a.out, in.name)
			}
		case f.write:
			if out != in.src {
				if err := os.WriteFile(in.name, []byte(out), 0o644); err != nil {
					return err
				}
			}
		default:
			if !first {
				fmt.Fprintln(a.out)
			}
			first = false
			fmt.Fprint(a.out, out)
		}
	}
	if bad {
		return silentExit{Code: exitBadInput}
	}
	if unformatted {
		return silentExit{Code: exitFailure}
	}
	return nil
}
