// Package lang owns tierflow's query language: the lexer and the participle
// grammar, the typed AST (every node carries its lexer.Position), syntax errors
// with file:line:col and a caret, and the canonical printer behind `tierflow fmt`.
//
// The parser is semantic-free: it never resolves a name, checks a type or looks
// at a catalog; that is the planner's binder. lang imports nothing of tierflow
// and must not: every other package builds on it.
//
// Identifiers are kept as written (case-sensitive); double quotes ("Weird Name")
// allow any text, including reserved words. Keywords are case-insensitive.
// Reserved words (Keywords with Reserved set) cannot be bare identifiers; every
// other keyword (MODEL, TEXT, RATE, ...) is contextual and still a valid name.
package lang
