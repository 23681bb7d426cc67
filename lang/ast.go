package lang

import "github.com/alecthomas/participle/v2/lexer"

// The structs in this file are both the AST and the grammar (participle builds
// the parser from their tags; grammar.ebnf in testdata is the result). Every
// node has Pos, the position of its first token. String fields hold names and
// literal text already unquoted.

// Node is any AST node.
type Node interface {
	Position() lexer.Position
}

// Script is a parsed source file: statements separated by ";".
type Script struct {
	Pos        lexer.Position
	Statements []Statement `parser:"';'* ( @@ ( ';' @@? )* )?"`

	// Comments[i] holds the comments before and inside Statements[i], as
	// written; the printer puts them all on the lines before the statement.
	// Trailing holds those after the last statement. (Not grammar: filled from
	// the token stream after parsing.)
	// LineComments[i] is the comment after the ";" of Statements[i] on the
	// same line ("SET x = 1; -- why"); the printer keeps it there.
	Comments     [][]string
	LineComments []string
	Trailing     []string
}

// Statement is one of *Query, *Insert, *Explain, *CreateModel, *CreateStream,
// *CreateTable, *CreateView, *CreateSink, *Drop, *Show, *Describe, *Set,
// *StopQuery.
type Statement interface {
	Node
	statementNode()
}

// CreateModel is CREATE MODEL: an ML operator and its model variants.
type CreateModel struct {
	Pos         lexer.Position
	IfNotExists bool         `parser:"'CREATE' 'MODEL' @( 'IF' 'NOT' 'EXISTS' )?"`
	Name        string       `parser:"@( Ident | QIdent )"`
	Task        string       `parser:"( 'TASK' @String )?"`
	Inputs      []*ColumnDef `parser:"( 'INPUTS' '(' @@ ( ',' @@ )* ')' )?"`
	Outputs     []*ColumnDef `parser:"( 'OUTPUTS' '(' @@ ( ',' @@ )* ')' )?"`
	Variants    []*Variant   `parser:"'VARIANTS' '(' @@ ( ',' @@ )* ')'"`
	Options     []*Option    `parser:"( 'WITH' '(' @@ ( ',' @@ )* ')' )?"`
}

// Variant is one model variant: a name and the ONNX file that implements it.
type Variant struct {
	Pos     lexer.Position
	Name    string    `parser:"@( Ident | QIdent )"`
	Path    string    `parser:"'FROM' @String"`
	Options []*Option `parser:"( 'WITH' '(' @@ ( ',' @@ )* ')' )?"`
}

// CreateStream is CREATE STREAM: an unbounded source of rows.
type CreateStream struct {
	Pos         lexer.Position
	IfNotExists bool         `parser:"'CREATE' 'STREAM' @( 'IF' 'NOT' 'EXISTS' )?"`
	Name        string       `parser:"@( Ident | QIdent )"`
	Columns     []*ColumnDef `parser:"( '(' @@ ( ',' @@ )* ')' )?"` // none: inferred (FROM FILE only)
	Source      SourceKind   `parser:"'FROM' @( 'NATS' | 'JETSTREAM' | 'FILE' )"`
	Location    string       `parser:"@String"`
	Format      DataFormat   `parser:"( 'FORMAT' @( 'ARROW' | 'JSON' | 'CSV' | 'PARQUET' ) )?"`
	Tier        string       `parser:"( 'AT' 'TIER' @( Ident | QIdent )"`
	Locations   *NumberLit   `parser:"  ( 'LOCATIONS' @@ )? )?"`
	Rate        *Rate        `parser:"@@?"`
	Options     []*Option    `parser:"( 'WITH' '(' @@ ( ',' @@ )* ')' )?"`
}

// Rate is RATE x PER unit: the expected input rate of a stream.
type Rate struct {
	Pos   lexer.Position
	Value *NumberLit `parser:"'RATE' @@"`
	Per   TimeUnit   `parser:"'PER' @( 'SECOND' | 'MINUTE' | 'HOUR' )"`
}

// CreateTable is CREATE TABLE: a bounded relation read from a file.
type CreateTable struct {
	Pos         lexer.Position
	IfNotExists bool         `parser:"'CREATE' 'TABLE' @( 'IF' 'NOT' 'EXISTS' )?"`
	Name        string       `parser:"@( Ident | QIdent )"`
	Columns     []*ColumnDef `parser:"( '(' @@ ( ',' @@ )* ')' )?"`
	Path        string       `parser:"'FROM' 'FILE' @String"`
	Format      DataFormat   `parser:"( 'FORMAT' @( 'ARROW' | 'JSON' | 'CSV' | 'PARQUET' ) )?"`
	Options     []*Option    `parser:"( 'WITH' '(' @@ ( ',' @@ )* ')' )?"`
}

// CreateView is CREATE [OR REPLACE] VIEW name [(columns)] AS query: a named
// query that FROM clauses read as if it were a table (or a stream, when its
// query reads one). Each use binds the query anew, as a subquery.
type CreateView struct {
	Pos         lexer.Position
	OrReplace   bool     `parser:"'CREATE' @( 'OR' 'REPLACE' )? 'VIEW'"`
	IfNotExists bool     `parser:"@( 'IF' 'NOT' 'EXISTS' )?"`
	Name        string   `parser:"@( Ident | QIdent )"`
	Columns     []string `parser:"( '(' @( Ident | QIdent ) ( ',' @( Ident | QIdent ) )* ')' )?"`
	Query       *Query   `parser:"'AS' @@"`
}

// CreateSink is CREATE SINK: where INSERT INTO writes. Location is empty for
// STDOUT and DISCARD (rows are counted and dropped: Flink's blackhole, for
// measuring a query without its output's cost).
type CreateSink struct {
	Pos         lexer.Position
	IfNotExists bool       `parser:"'CREATE' 'SINK' @( 'IF' 'NOT' 'EXISTS' )?"`
	Name        string     `parser:"@( Ident | QIdent )"`
	Target      SourceKind `parser:"'TO' ( @( 'STDOUT' | 'DISCARD' ) | @( 'NATS' | 'JETSTREAM' | 'FILE' )"`
	Location    string     `parser:"  @String )"`
	Format      DataFormat `parser:"( 'FORMAT' @( 'ARROW' | 'JSON' | 'CSV' | 'PARQUET' ) )?"`
	Options     []*Option  `parser:"( 'WITH' '(' @@ ( ',' @@ )* ')' )?"`
}

// Drop is DROP {MODEL|STREAM|TABLE|SINK|VIEW} [IF EXISTS] name.
type Drop struct {
	Pos      lexer.Position
	Kind     ObjectKind `parser:"'DROP' @( 'MODEL' | 'STREAM' | 'TABLE' | 'SINK' | 'VIEW' )"`
	IfExists bool       `parser:"@( 'IF' 'EXISTS' )?"`
	Name     string     `parser:"@( Ident | QIdent )"`
}

// ColumnDef is a column name and its type.
type ColumnDef struct {
	Pos  lexer.Position
	Name string `parser:"@( Ident | QIdent )"`
	Type *Type  `parser:"@@"`
}

// Type is a column type. For TENSOR, Elem is the element type and Dims the
// shape (TENSOR(FLOAT, 3, 224, 224)); for DECIMAL (or NUMERIC), Precision
// and Scale when written (DECIMAL(15,2); DECIMAL alone is DuckDB's
// DECIMAL(18,3), DECIMAL(p) is DECIMAL(p,0)).
type Type struct {
	Pos       lexer.Position
	Name      TypeName `parser:"( @( 'BOOLEAN' | 'BOOL' | 'INTEGER' | 'INT' | 'BIGINT' | 'FLOAT' | 'REAL' | 'DOUBLE' | 'VARCHAR' | 'STRING' | 'TEXT' | 'BLOB' | 'BYTES' | 'TIMESTAMP' | 'DATE' | 'DECIMAL' | 'NUMERIC' ) | @'TENSOR' '('"`
	Elem      TypeName `parser:"  @( 'BOOLEAN' | 'BOOL' | 'INTEGER' | 'INT' | 'BIGINT' | 'FLOAT' | 'REAL' | 'DOUBLE' )"`
	Dims      []int64  `parser:"  ( ',' @Int )* ')' )"`
	Precision *int64   `parser:"( '(' @Int"`
	Scale     *int64   `parser:"  ( ',' @Int )? ')' )?"`
}

// Option is key = literal in a WITH (...) list. Key may be dotted (a.b).
type Option struct {
	Pos   lexer.Position
	Key   string  `parser:"@( Ident | Keyword ) ( @'.' @( Ident | Keyword ) )*"`
	Value Literal `parser:"'=' @@"`
}

// Insert is INSERT INTO sink SELECT ...
type Insert struct {
	Pos   lexer.Position
	Sink  string `parser:"'INSERT' 'INTO' @( Ident | QIdent )"`
	Query *Query `parser:"@@"`
}

// Explain is EXPLAIN [ANALYZE] [(options)] followed by a query or an insert;
// exactly one of Query and Insert is set.
type Explain struct {
	Pos     lexer.Position
	Analyze bool             `parser:"'EXPLAIN' @'ANALYZE'?"`
	Options []*ExplainOption `parser:"( '(' @@ ( ',' @@ )* ')' )?"`
	Query   *Query           `parser:"( @@"`
	Insert  *Insert          `parser:"| @@ )"`
}

// Target is the explained statement.
func (e *Explain) Target() Statement {
	if e.Insert != nil {
		return e.Insert
	}
	return e.Query
}

// ExplainOption is one KEY value pair of EXPLAIN (FORMAT DOT, STRATEGY beam),
// or a bare KEY (FRONTIER) for a flag; Value is kept as written, "" for a flag.
type ExplainOption struct {
	Pos   lexer.Position
	Key   OptionKey `parser:"@( Ident | Keyword )"`
	Value string    `parser:"@( Ident | QIdent | Int | Float )?"`
}

// Show is SHOW MODELS, SHOW WORKERS, ...
type Show struct {
	Pos  lexer.Position
	What ShowWhat `parser:"'SHOW' @( 'MODELS' | 'STREAMS' | 'TABLES' | 'SINKS' | 'WORKERS' | 'TIERS' | 'QUERIES' | 'FUNCTIONS' )"`
}

// Describe is DESCRIBE name.
type Describe struct {
	Pos  lexer.Position
	Name string `parser:"'DESCRIBE' @( Ident | QIdent )"`
}

// Set is SET a.b = literal.
type Set struct {
	Pos   lexer.Position
	Key   string  `parser:"'SET' @( Ident | Keyword ) ( @'.' @( Ident | Keyword ) )*"`
	Value Literal `parser:"'=' @@"`
	// KeyPos is where the setting's name starts (set by Parse): an unknown
	// setting is blamed there, not at SET.
	KeyPos lexer.Position
}

// StopQuery is STOP QUERY id.
type StopQuery struct {
	Pos lexer.Position
	ID  string `parser:"'STOP' 'QUERY' @( Ident | QIdent | Int )"`
}

// Query is a SELECT, or several joined by UNION ALL, with the clauses that apply
// to the whole result: ORDER BY, LIMIT, OFFSET and the objectives of WITH (...).
type Query struct {
	Pos      lexer.Position
	With     []*CTE    `parser:"( 'WITH' @@ ( ',' @@ )* )?"`
	Select   *Select   `parser:"@@"`
	UnionAll []*Select `parser:"( 'UNION' 'ALL' @@ )*"`
	// OrderByAll is DuckDB's ORDER BY ALL: by every output column, left
	// to right.
	OrderByAll bool         `parser:"( 'ORDER' 'BY' ( @'ALL'"`
	OrderBy    []*OrderItem `parser:"  | @@ ( ',' @@ )* ) )?"`
	Limit      *NumberLit   `parser:"( 'LIMIT' @@ )?"`
	Offset     *NumberLit   `parser:"( 'OFFSET' @@ )?"`
	Objectives []Objective  `parser:"( 'WITH' '(' @@ ( ',' @@ )* ')' )?"`
}

// CTE is one common table expression, WITH name [(columns)] AS (query):
// a named subquery the query's FROM clauses can read. A query starts with
// them, so they never meet the objectives' WITH (...) at its end.
type CTE struct {
	Pos     lexer.Position
	Name    string   `parser:"@( Ident | QIdent )"`
	Columns []string `parser:"( '(' @( Ident | QIdent ) ( ',' @( Ident | QIdent ) )* ')' )?"`
	Query   *Query   `parser:"'AS' '(' @@ ')'"`
}

// Selects returns the SELECT and the UNION ALL branches in order.
func (q *Query) Selects() []*Select { return append([]*Select{q.Select}, q.UnionAll...) }

// Select is one SELECT block. From items are separated by commas (a cross
// product); each carries its joins.
type Select struct {
	Pos      lexer.Position
	Distinct bool          `parser:"'SELECT' @'DISTINCT'?"`
	Items    []*SelectItem `parser:"@@ ( ',' @@ )*"`
	From     []*FromItem   `parser:"( 'FROM' @@ ( ',' @@ )* )?"`
	Where    Expr          `parser:"( 'WHERE' @@ )?"`
	// GroupByAll is DuckDB's GROUP BY ALL: by every SELECT item that has
	// no aggregate.
	GroupByAll bool         `parser:"( 'GROUP' 'BY' ( @'ALL'"`
	GroupBy    []Expr       `parser:"  | @@ ( ',' @@ )* ) )?"`
	Having     Expr         `parser:"( 'HAVING' @@ )?"`
	Windows    []*WindowDef `parser:"( 'WINDOW' @@ ( ',' @@ )* )?"`
}

// SelectItem is `*`, `t.*` (Star with Qualifier t) or `expr [AS alias]`.
// After AS any keyword is a name (AS offset), as in DuckDB.
type SelectItem struct {
	Pos       lexer.Position
	Qualifier string `parser:"( @( Ident | QIdent ) '.'"`
	Star      bool   `parser:"  @'*' | @'*'"`
	Expr      Expr   `parser:"| @@"`
	Alias     string `parser:"  ( 'AS' @( Ident | QIdent | Keyword ) | @( Ident | QIdent ) )? )"`
}

// FromItem is a table reference and the joins that follow it.
type FromItem struct {
	Pos   lexer.Position
	Table *TableRef `parser:"@@"`
	Joins []*Join   `parser:"@@*"`
}

// TableRef is a named stream, table or view, or a parenthesised subquery,
// with an optional alias and column names. Exactly one of Name and Subquery
// is set.
type TableRef struct {
	Pos      lexer.Position
	Name     string `parser:"( @( Ident | QIdent )"`
	Subquery *Query `parser:"| '(' @@ ')' )"`
	Alias    string `parser:"( 'AS' @( Ident | QIdent ) | (?! 'WINDOW' ( Ident | QIdent ) 'AS' ) @( Ident | QIdent ) )?"`
	// Columns renames the relation's columns, in order: AS c_orders
	// (c_custkey, c_count). Those not named keep their names.
	Columns []string `parser:"( '(' @( Ident | QIdent ) ( ',' @( Ident | QIdent ) )* ')' )?"`
}

// Join is one join. Lateral is set for CROSS JOIN LATERAL f(args), whose
// output columns become part of the row; otherwise Table is set.
type Join struct {
	Pos     lexer.Position
	Kind    JoinKind  `parser:"@( 'INNER'? 'JOIN' | ( 'LEFT' | 'RIGHT' | 'FULL' ) 'OUTER'? 'JOIN' | 'CROSS' 'JOIN' )"`
	Lateral *Lateral  `parser:"( @@"`
	Table   *TableRef `parser:"| @@ )"`
	On      Expr      `parser:"( 'ON' @@ )?"`
}

// Lateral is LATERAL f(args) [WITH (key = value, ...)] [AS] alias [(c1, c2,
// ...)]: a model or table function applied to every row; Options set how
// this call runs (a model's batching: max_batch, max_delay_ms); Columns
// name its outputs.
type Lateral struct {
	Pos     lexer.Position
	Call    *FuncCall     `parser:"'LATERAL' @@"`
	Options []*CallOption `parser:"( (?= 'WITH' '(' Ident '=' ) 'WITH' '(' @@ ( ',' @@ )* ')' )?"`
	Alias   string        `parser:"( ( 'AS' @( Ident | QIdent ) | @( Ident | QIdent ) )"`
	Columns []string      `parser:"  ( '(' @( Ident | QIdent ) ( ',' @( Ident | QIdent ) )* ')' )? )?"`
}

// CallOption is key = literal in a LATERAL call's WITH (...). A call without
// an alias may be followed by the query's WITH (ACCURACY >= ...): the parser
// takes the WITH as the call's only when it reads WITH ( key =, which no
// objective starts with.
type CallOption struct {
	Pos   lexer.Position
	Key   string  `parser:"@Ident"`
	Value Literal `parser:"'=' @@"`
}

// OrderItem is one ORDER BY key. Nulls is "FIRST", "LAST" or "" (DuckDB's
// default: last, in either direction).
type OrderItem struct {
	Pos   lexer.Position
	Expr  Expr       `parser:"@@"`
	Desc  bool       `parser:"( @'DESC' | 'ASC' )?"`
	Nulls NullsOrder `parser:"( 'NULLS' @( 'FIRST' | 'LAST' ) )?"`
}

// Objective is one clause of a query's WITH (...): *AccuracyObjective,
// *ThroughputObjective, *LatencyObjective, *BudgetObjective or
// *PriorityObjective.
type Objective interface {
	Node
	objectiveNode()
}

// AccuracyObjective is ACCURACY >= Min (in the unit of the accuracy profiles),
// optionally DATA AWARE: the accuracy of a variant is then its per-class
// recall weighed by the live stream's estimated class mix (SneakPeek), and
// the query is re-planned when the mix shifts.
type AccuracyObjective struct {
	Pos       lexer.Position
	Min       *NumberLit `parser:"'ACCURACY' '>=' @@"`
	DataAware bool       `parser:"@( 'DATA' 'AWARE' )?"`
}

// ThroughputObjective is THROUGHPUT >= Min PER unit.
type ThroughputObjective struct {
	Pos lexer.Position
	Min *NumberLit `parser:"'THROUGHPUT' '>=' @@"`
	Per TimeUnit   `parser:"'PER' @( 'SECOND' | 'MINUTE' )"`
}

// LatencyObjective is LATENCY <= Max MS [PERCENTILE p].
type LatencyObjective struct {
	Pos        lexer.Position
	Max        *NumberLit `parser:"'LATENCY' '<=' @@"`
	Unit       TimeUnit   `parser:"@( 'MS' | 'MILLISECOND' | 'MILLISECONDS' | 'SECOND' | 'SECONDS' )"`
	Percentile *NumberLit `parser:"( 'PERCENTILE' @@ )?"`
}

// BudgetObjective is BUDGET <= Max PER HOUR (cost units per hour).
type BudgetObjective struct {
	Pos lexer.Position
	Max *NumberLit `parser:"'BUDGET' '<=' @@"`
	Per TimeUnit   `parser:"'PER' @'HOUR'"`
}

// PriorityObjective is PRIORITY REALTIME | BEST_EFFORT.
type PriorityObjective struct {
	Pos   lexer.Position
	Class PriorityClass `parser:"'PRIORITY' @( 'REALTIME' | 'BEST_EFFORT' )"`
}

func (*Query) statementNode()        {}
func (*Insert) statementNode()       {}
func (*Explain) statementNode()      {}
func (*CreateModel) statementNode()  {}
func (*CreateStream) statementNode() {}
func (*CreateTable) statementNode()  {}
func (*CreateView) statementNode()   {}
func (*CreateSink) statementNode()   {}
func (*Drop) statementNode()         {}
func (*Show) statementNode()         {}
func (*Describe) statementNode()     {}
func (*Set) statementNode()          {}
func (*StopQuery) statementNode()    {}

func (*AccuracyObjective) objectiveNode()   {}
func (*ThroughputObjective) objectiveNode() {}
func (*LatencyObjective) objectiveNode()    {}
func (*BudgetObjective) objectiveNode()     {}
func (*PriorityObjective) objectiveNode()   {}

// Position implementations.
func (n *Script) Position() lexer.Position              { return n.Pos }
func (n *CreateModel) Position() lexer.Position         { return n.Pos }
func (n *Variant) Position() lexer.Position             { return n.Pos }
func (n *CreateStream) Position() lexer.Position        { return n.Pos }
func (n *Rate) Position() lexer.Position                { return n.Pos }
func (n *CreateTable) Position() lexer.Position         { return n.Pos }
func (n *CreateView) Position() lexer.Position          { return n.Pos }
func (n *CreateSink) Position() lexer.Position          { return n.Pos }
func (n *Drop) Position() lexer.Position                { return n.Pos }
func (n *ColumnDef) Position() lexer.Position           { return n.Pos }
func (n *Type) Position() lexer.Position                { return n.Pos }
func (n *Option) Position() lexer.Position              { return n.Pos }
func (n *CallOption) Position() lexer.Position          { return n.Pos }
func (n *Insert) Position() lexer.Position              { return n.Pos }
func (n *Explain) Position() lexer.Position             { return n.Pos }
func (n *ExplainOption) Position() lexer.Position       { return n.Pos }
func (n *Show) Position() lexer.Position                { return n.Pos }
func (n *Describe) Position() lexer.Position            { return n.Pos }
func (n *Set) Position() lexer.Position                 { return n.Pos }
func (n *StopQuery) Position() lexer.Position           { return n.Pos }
func (n *Query) Position() lexer.Position               { return n.Pos }
func (n *CTE) Position() lexer.Position                 { return n.Pos }
func (n *Select) Position() lexer.Position              { return n.Pos }
func (n *SelectItem) Position() lexer.Position          { return n.Pos }
func (n *FromItem) Position() lexer.Position            { return n.Pos }
func (n *TableRef) Position() lexer.Position            { return n.Pos }
func (n *Join) Position() lexer.Position                { return n.Pos }
func (n *Lateral) Position() lexer.Position             { return n.Pos }
func (n *OrderItem) Position() lexer.Position           { return n.Pos }
func (n *AccuracyObjective) Position() lexer.Position   { return n.Pos }
func (n *ThroughputObjective) Position() lexer.Position { return n.Pos }
func (n *LatencyObjective) Position() lexer.Position    { return n.Pos }
func (n *BudgetObjective) Position() lexer.Position     { return n.Pos }
func (n *PriorityObjective) Position() lexer.Position   { return n.Pos }
