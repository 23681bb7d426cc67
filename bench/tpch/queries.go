package tpch

import (
	"embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The 22 queries are the specification's text (2.4) with its validation
// parameters substituted, one file each, as an analyst would paste them:
// lower-case keywords, comma joins, date arithmetic with intervals, Q15's
// view created and dropped around the query. A row count the specification
// asks for is a LIMIT.
//
//go:embed queries/*.sql
var queryFiles embed.FS

// Query is one TPC-H query.
type Query struct {
	Name  string // q01 ... q22
	Title string // from the file's first comment
	Text  string // every statement, as in the file
}

// Queries are the 22 queries in order.
func Queries() []Query {
	ents, err := queryFiles.ReadDir("queries")
	if err != nil {
		panic(err)
	}
	var qs []Query
	for _, e := range ents {
		b, err := queryFiles.ReadFile("queries/" + e.Name())
		if err != nil {
			panic(err)
		}
		text := string(b)
		title, _, _ := strings.Cut(strings.TrimPrefix(text, "-- "), "\n")
		qs = append(qs, Query{Name: strings.TrimSuffix(e.Name(), ".sql"), Title: title, Text: text})
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
	return qs
}

// Select picks queries by name ("q1", "q01", "1" all mean Q1); none picks all.
func Select(names []string) ([]Query, error) {
	all := Queries()
	if len(names) == 0 {
		return all, nil
	}
	var out []Query
	for _, n := range names {
		num, err := strconv.Atoi(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(n)), "q"))
		if err != nil || num < 1 || num > len(all) {
			return nil, fmt.Errorf("%w: no TPC-H query %q (want q1 ... q22)", ErrBadInput, n)
		}
		out = append(out, all[num-1])
	}
	return out, nil
}

// Statements splits a query's text at its top-level semicolons (Q15 has
// three statements; an engine without scripts runs them one by one).
// Comments are dropped; the queries have no semicolon inside a string.
func (q Query) Statements() []string {
	var lines []string
	for _, l := range strings.Split(q.Text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--") {
			continue
		}
		lines = append(lines, l)
	}
	var out []string
	for _, s := range strings.Split(strings.Join(lines, "\n"), ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
