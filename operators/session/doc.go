// Package session is tierflow's one statement interpreter (Session):
// `tierflow run` (in this process with --local, or on a cluster) and the
// REPL each run their statements through a Session. It keeps what the
// statements make (the catalog CREATE and DROP change, what SET changes),
// answers the statements that act on a session rather than on data itself
// (SET: planner and executor settings for the statements after it; SHOW:
// listings of the catalog, the infrastructure and the functions; DESCRIBE),
// plans EXPLAIN, binds every query once (and plans it, where the engine
// does not place queries itself), and hands it to an Engine: operators/exec's
// in this process, runtime/cluster's on a cluster. An Output decides how
// results, listings and plans print (run's --format, the REPL's renderer),
// so a script behaves the same typed at the prompt and run from a file, on
// one machine or many.
//
// Listings are plain rows of text; how they print (table, CSV, JSON) is the
// Output's.
package session
