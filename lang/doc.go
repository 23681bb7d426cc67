// Package lang owns tierflow's query language: the lexer and the participle
// grammar, the typed AST (every node carries its lexer.Position), syntax errors
// with file:line:col and a caret, and the canonical printer behind `tierflow fmt`.
//
// The parser is semantic-free: it never resolves a name, checks a type or looks
// at a catalog; that is the planner's binder. lang imports nothing of tierflow
// and must not: every other package builds on it.
//
// Entry points:
//
//	Parse(filename, src) (*Script, error)   statements separated by ";"
//	ParseStatement, ParseExpr               one statement, one expression
//	Format(*Script), Print(Node)            canonical SQL; Parse(Format(s)) == s
//	Inspect(Node, func(Node) bool)          walk a tree
//	Tokens, IsComplete, Keywords            for a REPL: lexing, completion
//	Grammar()                               the EBNF (testdata/grammar.ebnf)
//
// Errors are *Error values wrapping ErrSyntax; Pretty renders the line and a
// caret.
//
// The AST: Script.Statements holds *Query, *Insert, *Explain, *CreateModel,
// *CreateStream, *CreateTable, *CreateSink, *Drop, *Show, *Describe, *Set and
// *StopQuery. Expressions (Expr) are *BinaryExpr, *UnaryExpr, *IsNullExpr,
// *BetweenExpr, *InExpr, *LikeExpr, *CaseExpr, *CastExpr, *FuncCall,
// *ColumnRef, *FieldAccess, *IndexExpr and literals. Windows (TUMBLE, HOP,
// SESSION) and model calls (CROSS JOIN LATERAL m(...)) are FuncCalls: names
// mean nothing until the binder looks them up. A window function call is a
// FuncCall with Over set (OVER (PARTITION BY ... ORDER BY ... frame), or OVER
// a name of the SELECT's WINDOW clause). Enumerated words (types, units,
// formats, join kinds) are normalised named string types with constants.
//
// Identifiers are kept as written (case-sensitive); double quotes ("Weird Name")
// allow any text, including reserved words. Keywords are case-insensitive.
// Reserved words (IsReserved) cannot be bare identifiers; every other keyword
// (MODEL, TEXT, RATE, ...) is contextual and still a valid name.
package lang
