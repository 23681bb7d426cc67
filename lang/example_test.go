package lang_test

import (
	"errors"
	"fmt"

	"github.com/tierflow/tierflow/lang"
)

func ExampleParse() {
	script, err := lang.Parse("q.sql", `
		SELECT camera, count(*) AS n
		FROM shelves
		CROSS JOIN LATERAL classify(image) AS c(label, score)
		WHERE score > 0.8
		GROUP BY camera, TUMBLE(ts, INTERVAL '10' SECOND)
		WITH (ACCURACY >= 0.85, THROUGHPUT >= 40 PER SECOND)`)
	if err != nil {
		fmt.Println(err)
		return
	}
	q := script.Statements[0].(*lang.Query)
	lat := q.Select.From[0].Joins[0].Lateral
	fmt.Println("model:", lat.Call.Name, "outputs:", lat.Columns)
	where := q.Select.Where.(*lang.BinaryExpr)
	fmt.Println("where:", where.Op, lang.Print(where.Right), "at", where.Pos)
	for _, o := range q.Objectives {
		switch o := o.(type) {
		case *lang.AccuracyObjective:
			fmt.Println("accuracy >=", o.Min.Value)
		case *lang.ThroughputObjective:
			fmt.Println("throughput >=", o.Min.Value, "per", o.Per)
		}
	}
	// Output:
	// model: classify outputs: [label score]
	// where: > 0.8 at q.sql:5:9
	// accuracy >= 0.85
	// throughput >= 40 per SECOND
}

func ExampleParse_error() {
	_, err := lang.Parse("q.sql", "SELECT camera\nFORM shelves;")
	fmt.Println(errors.Is(err, lang.ErrSyntax))
	var pe *lang.Error
	if errors.As(err, &pe) {
		fmt.Println(pe.Pretty())
	}
	// Output:
	// true
	// q.sql:2:1: unexpected "FORM", expected "FROM"
	// FORM shelves;
	// ^
}

func ExampleFormat() {
	script, err := lang.Parse("q.sql", "select a,b from t where a>1 and not b;show models")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(lang.Format(script))
	// Output:
	// SELECT a, b
	// FROM t
	// WHERE a > 1 AND NOT b;
	//
	// SHOW MODELS;
}

func ExampleIsComplete() {
	fmt.Println(lang.IsComplete("SELECT a FROM t"))
	fmt.Println(lang.IsComplete("SELECT a FROM t; -- done"))
	fmt.Println(lang.IsComplete("SELECT ';"))
	// Output:
	// false
	// true
	// false
}
