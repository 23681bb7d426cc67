package repl

import (
	"github.com/tierflow/tierflow/lang"
	"github.com/tierflow/tierflow/operators/session"
)

// show answers SHOW from the session's state (operators/session, shared
// with `tierflow run`).
func (s *Session) show(st *lang.Show) (session.Listing, error) {
	t, err := session.Show(st, s.cat, s.inf, s.funcs)
	if err != nil {
		return t, inputError{err}
	}
	return t, nil
}

// describe is \d NAME and DESCRIBE NAME.
func (s *Session) describe(name, at string) error {
	t, err := session.Describe(name, at, s.cat, s.funcs)
	if err != nil {
		return err
	}
	return s.printTable(t)
}
