// Package session answers the statements that act on a session rather than
// on data: SET (planner and executor settings for the statements after it),
// SHOW (listings of the catalog, the infrastructure and the functions) and
// DESCRIBE. The REPL and every `tierflow run` path (local executor, embedded
// cluster, worker processes) answer them here, so a script behaves the same
// typed at the prompt and run from a file.
//
// Listings are plain rows of text; how they print (table, CSV, JSON) is the
// caller's.
package session
