package lang

import "strings"

// The named string types below are closed sets of upper-case words. Each one
// normalises what the user wrote (any case, synonyms) when it is parsed, so the
// planner compares against the constants and the printer emits the canonical word.

func capWord(v []string) string { return strings.ToUpper(strings.Join(v, "")) }

// TypeName is a column type. Synonyms are folded: BOOL -> BOOLEAN, INTEGER -> INT,
// REAL -> FLOAT, STRING and TEXT -> VARCHAR, BYTES -> BLOB.
type TypeName string

// Column types.
const (
	TypeBoolean   TypeName = "BOOLEAN"
	TypeInt       TypeName = "INT"
	TypeBigint    TypeName = "BIGINT"
	TypeFloat     TypeName = "FLOAT"
	TypeDouble    TypeName = "DOUBLE"
	TypeVarchar   TypeName = "VARCHAR"
	TypeBlob      TypeName = "BLOB"
	TypeTimestamp TypeName = "TIMESTAMP"
	// TypeDate is a cast's target only: x::DATE is x's day (a TIMESTAMP
	// at midnight), DATE 'YYYY-MM-DD' that day.
	TypeDate   TypeName = "DATE"
	TypeTensor TypeName = "TENSOR"
	// TypeDecimal is an exact number, DECIMAL(precision, scale).
	TypeDecimal TypeName = "DECIMAL"
)

// Capture implements participle.Capture.
func (t *TypeName) Capture(v []string) error {
	switch w := capWord(v); w {
	case "BOOL":
		*t = TypeBoolean
	case "INTEGER":
		*t = TypeInt
	case "REAL":
		*t = TypeFloat
	case "STRING", "TEXT":
		*t = TypeVarchar
	case "BYTES":
		*t = TypeBlob
	case "NUMERIC":
		*t = TypeDecimal
	default:
		*t = TypeName(w)
	}
	return nil
}

// TimeUnit is the unit of an INTERVAL, a RATE, a LATENCY or a BUDGET. Plurals
// and MS fold to the singular word.
type TimeUnit string

// Time units.
const (
	Millisecond TimeUnit = "MILLISECOND"
	Second      TimeUnit = "SECOND"
	Minute      TimeUnit = "MINUTE"
	Hour        TimeUnit = "HOUR"
	Day         TimeUnit = "DAY"
	Week        TimeUnit = "WEEK"
	// Month and Year are calendar units: an interval of them has no fixed
	// length (Seconds is 0); dates add them by the calendar.
	Month TimeUnit = "MONTH"
	Year  TimeUnit = "YEAR"
)

// Capture implements participle.Capture.
func (u *TimeUnit) Capture(v []string) error {
	w := capWord(v)
	if w == "MS" {
		*u = Millisecond
		return nil
	}
	*u = TimeUnit(strings.TrimSuffix(w, "S"))
	return nil
}

// Months is the length of a calendar unit in months (0 for the others).
func (u TimeUnit) Months() int64 {
	switch u {
	case Month:
		return 1
	case Year:
		return 12
	}
	return 0
}

// Seconds is the length of the unit in seconds (0 for a calendar unit).
func (u TimeUnit) Seconds() float64 {
	switch u {
	case Millisecond:
		return 0.001
	case Second:
		return 1
	case Minute:
		return 60
	case Hour:
		return 3600
	case Day:
		return 86400
	case Week:
		return 7 * 86400
	}
	return 0
}

// SourceKind is where a stream or table comes from, or where a sink goes.
type SourceKind string

// Source and sink kinds.
const (
	SourceNATS      SourceKind = "NATS"
	SourceJetStream SourceKind = "JETSTREAM"
	SourceFile      SourceKind = "FILE"
	SourceStdout    SourceKind = "STDOUT"
	SourceDiscard   SourceKind = "DISCARD"
)

// Capture implements participle.Capture.
func (k *SourceKind) Capture(v []string) error { *k = SourceKind(capWord(v)); return nil }

// DataFormat is the encoding of a stream, table or sink.
type DataFormat string

// Data formats.
const (
	FormatArrow   DataFormat = "ARROW"
	FormatJSON    DataFormat = "JSON"
	FormatCSV     DataFormat = "CSV"
	FormatParquet DataFormat = "PARQUET"
)

// Capture implements participle.Capture.
func (f *DataFormat) Capture(v []string) error { *f = DataFormat(capWord(v)); return nil }

// ObjectKind is what a DROP removes.
type ObjectKind string

// Catalog object kinds.
const (
	ObjectModel  ObjectKind = "MODEL"
	ObjectStream ObjectKind = "STREAM"
	ObjectTable  ObjectKind = "TABLE"
	ObjectSink   ObjectKind = "SINK"
	ObjectView   ObjectKind = "VIEW"
)

// Capture implements participle.Capture.
func (k *ObjectKind) Capture(v []string) error { *k = ObjectKind(capWord(v)); return nil }

// ShowWhat is what a SHOW lists.
type ShowWhat string

// SHOW targets.
const (
	ShowModels    ShowWhat = "MODELS"
	ShowStreams   ShowWhat = "STREAMS"
	ShowTables    ShowWhat = "TABLES"
	ShowSinks     ShowWhat = "SINKS"
	ShowWorkers   ShowWhat = "WORKERS"
	ShowTiers     ShowWhat = "TIERS"
	ShowQueries   ShowWhat = "QUERIES"
	ShowFunctions ShowWhat = "FUNCTIONS"
)

// Capture implements participle.Capture.
func (s *ShowWhat) Capture(v []string) error { *s = ShowWhat(capWord(v)); return nil }

// JoinKind is the kind of a join. JOIN and INNER JOIN are both JoinInner; LEFT
// OUTER JOIN is JoinLeft.
type JoinKind string

// Join kinds.
const (
	JoinInner JoinKind = "INNER"
	JoinLeft  JoinKind = "LEFT"
	JoinRight JoinKind = "RIGHT"
	JoinFull  JoinKind = "FULL"
	JoinCross JoinKind = "CROSS"
)

// Capture implements participle.Capture.
func (k *JoinKind) Capture(v []string) error {
	if len(v) == 0 {
		return nil
	}
	switch strings.ToUpper(v[0]) {
	case "LEFT":
		*k = JoinLeft
	case "RIGHT":
		*k = JoinRight
	case "FULL":
		*k = JoinFull
	case "CROSS":
		*k = JoinCross
	default:
		*k = JoinInner
	}
	return nil
}

// PriorityClass is the scheduling class of a query.
type PriorityClass string

// Priority classes.
const (
	PriorityRealtime   PriorityClass = "REALTIME"
	PriorityBestEffort PriorityClass = "BEST_EFFORT"
)

// Capture implements participle.Capture.
func (p *PriorityClass) Capture(v []string) error { *p = PriorityClass(capWord(v)); return nil }

// OptionKey is the upper-cased key of an EXPLAIN option (FORMAT, STRATEGY, ...).
type OptionKey string

// Capture implements participle.Capture.
func (k *OptionKey) Capture(v []string) error { *k = OptionKey(capWord(v)); return nil }

// BinaryOp is the operator of a BinaryExpr. != is folded into <>.
type BinaryOp string

// Binary operators.
const (
	OpOr     BinaryOp = "OR"
	OpAnd    BinaryOp = "AND"
	OpEq     BinaryOp = "="
	OpNe     BinaryOp = "<>"
	OpLt     BinaryOp = "<"
	OpLe     BinaryOp = "<="
	OpGt     BinaryOp = ">"
	OpGe     BinaryOp = ">="
	OpAdd    BinaryOp = "+"
	OpSub    BinaryOp = "-"
	OpConcat BinaryOp = "||"
	OpMul    BinaryOp = "*"
	OpDiv    BinaryOp = "/"
	OpIntDiv BinaryOp = "//"
	OpMod    BinaryOp = "%"
)

// Capture implements participle.Capture.
func (o *BinaryOp) Capture(v []string) error {
	w := capWord(v)
	if w == "!=" {
		w = "<>"
	}
	*o = BinaryOp(w)
	return nil
}

// UnaryOp is the operator of a UnaryExpr.
type UnaryOp string

// Unary operators.
const (
	OpNot UnaryOp = "NOT"
	OpNeg UnaryOp = "-"
)

// NullsOrder is where an ORDER BY key puts NULLs: "FIRST", "LAST", or ""
// (not said: DuckDB's default, last).
type NullsOrder string

// Capture implements participle.Capture.
func (n *NullsOrder) Capture(v []string) error { *n = NullsOrder(capWord(v)); return nil }
