package tpch

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
)

// Types is how the generator stores TPC-H's money and date columns.
type Types string

const (
	// SpecTypes are the specification's: DECIMAL(15,2) money, DATE dates.
	SpecTypes Types = "spec"
	// DoubleTypes store money as DOUBLE and dates as TIMESTAMP, as engines
	// without decimals load TPC-H.
	DoubleTypes Types = "double"
)

// ParseTypes reads --types.
func ParseTypes(s string) (Types, error) {
	switch t := Types(strings.ToLower(s)); t {
	case SpecTypes, DoubleTypes:
		return t, nil
	}
	return "", fmt.Errorf("types %q: want spec (DECIMAL and DATE) or double (DOUBLE and TIMESTAMP)", s)
}

// kind is a column's domain: the generator fills int64s (integers, money
// in cents, dates in days since 1970) or strings, and the kind and Types
// make the Arrow type.
type kind int

const (
	kInt    kind = iota // INTEGER
	kBigint             // BIGINT
	kMoney              // DECIMAL(15,2) or DOUBLE
	kDate               // DATE or TIMESTAMP
	kString             // VARCHAR
)

type column struct {
	name string
	kind kind
}

// tableID names a table's random streams (and the text pool's).
type tableID int

const (
	tablePart tableID = iota + 1
	tableSupplier
	tablePartsupp
	tableCustomer
	tableOrders
	tableLineitem
	tableNation
	tableRegion
	tableText
)

// Table is one of TPC-H's eight relations.
type Table struct {
	Name string
	id   tableID
	cols []column
}

// Columns are the table's column names in order.
func (t Table) Columns() []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		out[i] = c.name
	}
	return out
}

// Schema is the Arrow schema the table's Parquet file is written with.
func (t Table) Schema(ty Types) *arrow.Schema {
	fs := make([]arrow.Field, len(t.cols))
	for i, c := range t.cols {
		fs[i] = arrow.Field{Name: c.name, Type: c.kind.arrowType(ty)}
	}
	return arrow.NewSchema(fs, nil)
}

// SQLTypes are the column types as a CREATE TABLE declares them.
func (t Table) SQLTypes(ty Types) []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		out[i] = c.kind.sqlType(ty)
	}
	return out
}

var (
	money     = &arrow.Decimal128Type{Precision: 15, Scale: 2}
	timestamp = &arrow.TimestampType{Unit: arrow.Microsecond}
)

func (k kind) arrowType(ty Types) arrow.DataType {
	switch k {
	case kInt:
		return arrow.PrimitiveTypes.Int32
	case kBigint:
		return arrow.PrimitiveTypes.Int64
	case kMoney:
		if ty == DoubleTypes {
			return arrow.PrimitiveTypes.Float64
		}
		return money
	case kDate:
		if ty == DoubleTypes {
			return timestamp
		}
		return arrow.FixedWidthTypes.Date32
	}
	return arrow.BinaryTypes.String
}

func (k kind) sqlType(ty Types) string {
	switch k {
	case kInt:
		return "INTEGER"
	case kBigint:
		return "BIGINT"
	case kMoney:
		if ty == DoubleTypes {
			return "DOUBLE"
		}
		return "DECIMAL(15,2)"
	case kDate:
		if ty == DoubleTypes {
			return "TIMESTAMP"
		}
		return "DATE"
	}
	return "VARCHAR"
}

// Tables are TPC-H's relations in the order the generator writes them.
var Tables = []Table{
	{Name: "region", id: tableRegion, cols: []column{
		{"r_regionkey", kInt}, {"r_name", kString}, {"r_comment", kString}}},
	{Name: "nation", id: tableNation, cols: []column{
		{"n_nationkey", kInt}, {"n_name", kString}, {"n_regionkey", kInt}, {"n_comment", kString}}},
	{Name: "supplier", id: tableSupplier, cols: []column{
		{"s_suppkey", kInt}, {"s_name", kString}, {"s_address", kString}, {"s_nationkey", kInt},
		{"s_phone", kString}, {"s_acctbal", kMoney}, {"s_comment", kString}}},
	{Name: "customer", id: tableCustomer, cols: []column{
		{"c_custkey", kInt}, {"c_name", kString}, {"c_address", kString}, {"c_nationkey", kInt},
		{"c_phone", kString}, {"c_acctbal", kMoney}, {"c_mktsegment", kString}, {"c_comment", kString}}},
	{Name: "part", id: tablePart, cols: []column{
		{"p_partkey", kInt}, {"p_name", kString}, {"p_mfgr", kString}, {"p_brand", kString},
		{"p_type", kString}, {"p_size", kInt}, {"p_container", kString}, {"p_retailprice", kMoney},
		{"p_comment", kString}}},
	{Name: "partsupp", id: tablePartsupp, cols: []column{
		{"ps_partkey", kInt}, {"ps_suppkey", kInt}, {"ps_availqty", kInt}, {"ps_supplycost", kMoney},
		{"ps_comment", kString}}},
	{Name: "orders", id: tableOrders, cols: []column{
		{"o_orderkey", kBigint}, {"o_custkey", kInt}, {"o_orderstatus", kString}, {"o_totalprice", kMoney},
		{"o_orderdate", kDate}, {"o_orderpriority", kString}, {"o_clerk", kString}, {"o_shippriority", kInt},
		{"o_comment", kString}}},
	{Name: "lineitem", id: tableLineitem, cols: []column{
		{"l_orderkey", kBigint}, {"l_partkey", kInt}, {"l_suppkey", kInt}, {"l_linenumber", kInt},
		{"l_quantity", kMoney}, {"l_extendedprice", kMoney}, {"l_discount", kMoney}, {"l_tax", kMoney},
		{"l_returnflag", kString}, {"l_linestatus", kString}, {"l_shipdate", kDate}, {"l_commitdate", kDate},
		{"l_receiptdate", kDate}, {"l_shipinstruct", kString}, {"l_shipmode", kString}, {"l_comment", kString}}},
}

// TableNamed returns the table called name.
func TableNamed(name string) (Table, bool) {
	for _, t := range Tables {
		if t.Name == name {
			return t, true
		}
	}
	return Table{}, false
}
