package repl

import (
	"github.com/tierflow/tierflow/operators/session"
)

// describe is \d NAME and DESCRIBE NAME.
func (s *Session) describe(name, at string) error {
	t, err := session.Describe(name, at, s.cat, s.funcs)
	if err != nil {
		return err
	}
	return s.printTable(t)
}
