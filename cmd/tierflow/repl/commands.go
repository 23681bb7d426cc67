package repl

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/tierflow/tierflow/operators/session"
)

// command is one backslash command.
type command struct {
	name, args, help string
	run              func(s *Session, ctx context.Context, arg string) error
}

// commands is the backslash command table, in the order \? lists them.
func commands() []command {
	return []command{
		{`\?`, "", "show this help", func(s *Session, _ context.Context, _ string) error {
			s.help()
			return nil
		}},
		{`\d`, "[NAME]", "list models, streams, tables and sinks, or describe NAME", func(s *Session, _ context.Context, arg string) error {
			if arg == "" {
				return s.printTable(session.Objects(s.cat))
			}
			return s.describe(arg, `\d`)
		}},
		{`\df`, "[PREFIX]", "list functions", func(s *Session, _ context.Context, arg string) error {
			return s.printTable(session.Functions(s.funcs, arg))
		}},
		{`\explain`, "", "explain the next statement instead of running it", func(s *Session, _ context.Context, arg string) error {
			s.explain = true
			s.note("The next SELECT or INSERT will be explained, not run.")
			return nil
		}},
		{`\timing`, "[on|off]", "print how long each statement takes", func(s *Session, _ context.Context, arg string) error {
			switch strings.ToLower(arg) {
			case "":
				s.timing = !s.timing
			case "on":
				s.timing = true
			case "off":
				s.timing = false
			default:
				return badf(`\timing takes on or off, not %q`, arg)
			}
			s.note("Timing is " + map[bool]string{true: "on", false: "off"}[s.timing] + ".")
			return nil
		}},
		{`\format`, "table|json|jsonl|csv", "choose how results print", func(s *Session, _ context.Context, arg string) error {
			if arg == "" {
				s.note("Output format is " + s.format + ".")
				return nil
			}
			if err := s.setFormat(arg); err != nil {
				return err
			}
			s.note("Output format is " + s.format + ".")
			return nil
		}},
		{`\i`, "FILE", "run the statements of FILE", func(s *Session, ctx context.Context, arg string) error {
			if arg == "" {
				return badf(`\i needs a file name`)
			}
			f, err := os.Open(arg)
			if err != nil {
				return badf("%v", err)
			}
			defer f.Close()
			return s.runScript(ctx, arg, f, true)
		}},
		{`\o`, "[FILE]", "send results to FILE (no FILE: back to the terminal)", func(s *Session, _ context.Context, arg string) error {
			return s.setOutput(arg)
		}},
		{`\q`, "", "quit (Ctrl-D also quits)", func(s *Session, _ context.Context, _ string) error {
			s.quit = true
			return nil
		}},
	}
}

// note prints a confirmation on a terminal; scripts stay quiet.
func (s *Session) note(msg string) {
	if s.cfg.Interactive {
		fmt.Fprintln(s.cfg.Err, msg)
	}
}

func (s *Session) help() {
	w := s.cfg.Out
	fmt.Fprintln(w, "Statements end with ';' and may span lines. Ctrl-C cancels a running query")
	fmt.Fprintln(w, "or clears the line; Ctrl-D or \\q quits. TAB completes keywords and names.")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-30s %s\n", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Also: SHOW MODELS|STREAMS|TABLES|SINKS|FUNCTIONS|TIERS|WORKERS, DESCRIBE NAME,")
	fmt.Fprintln(w, "EXPLAIN [(FORMAT text|json|dot, STRATEGY s, PROFILE p50)] query,")
	fmt.Fprintln(w, wrap("SET name = value for the session, name one of "+strings.Join(Settings(), ", ")+".", 79))
}

// runCommand runs a backslash command line such as `\d shelves`.
func (s *Session) runCommand(ctx context.Context, line string) error {
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	for _, c := range commands() {
		if c.name == name {
			return c.run(s, ctx, arg)
		}
	}
	return badf(`unknown command %s (\? lists them)`, name)
}

// wrap breaks text into lines of at most width columns at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
