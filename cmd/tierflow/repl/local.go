package repl

import "github.com/tierflow/tierflow/operators/exec"

// Local is the Engine that runs queries in this process with the operators'
// local executor (operators/exec's Engine, as `tierflow run --local`). base
// holds its defaults; a session's SET exec.max_delay, exec.on_error,
// exec.batch_size and exec.replay override them per query.
// The REPL's status line says what a quiet source waits on (the stream's
// Silent), not a line on stderr under the rows.
func Local(base exec.Options) Engine {
	base.Notices = nil
	return exec.Engine{Options: base}
}
