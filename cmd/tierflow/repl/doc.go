// Package repl is the engine of `tierflow repl`: it reads statements (a
// terminal with line editing, history and completion, or a script), keeps the
// session's state (the catalog grown by CREATE/DROP, the infrastructure, the
// planner options changed by SET), runs backslash commands, sends EXPLAIN to
// the planner and queries to an Engine, and renders results as they arrive
// (table, json, jsonl or csv) with a status line on a terminal.
//
// Query execution is behind the small Engine interface so that the REPL never
// depends on how queries run: Local adapts the operators' local executor, and
// cmd/tierflow picks the engine in one place. repl imports lang, the planner
// and operators/exec; never relay or runtime, and nothing imports repl but
// cmd/tierflow.
package repl
