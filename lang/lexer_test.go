package lang

import (
	"errors"
	"testing"
)

func TestTokensCarryPositionsAndKinds(t *testing.T) {
	toks, err := Tokens("q.sql", "select \"A b\" -- c\nfrom t")
	if err != nil {
		t.Fatal(err)
	}
	type tk struct {
		kind, value string
		line, col   int
	}
	var got []tk
	for _, x := range toks {
		if x.Kind != TokWhitespace {
			got = append(got, tk{x.Kind, x.Value, x.Pos.Line, x.Pos.Column})
		}
	}
	want := []tk{
		{TokKeyword, "select", 1, 1},
		{TokQuoted, `"A b"`, 1, 8},
		{TokComment, "-- c", 1, 14},
		{TokKeyword, "from", 2, 1},
		{TokIdent, "t", 2, 6},
	}
	if len(got) != len(want) {
		t.Fatalf("tokens = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("token %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestTokensUnterminated(t *testing.T) {
	for _, src := range []string{"select 'x", `select "x`, "select /* x"} {
		if _, err := Tokens("q.sql", src); !errors.Is(err, ErrSyntax) {
			t.Errorf("Tokens(%q) error = %v, want ErrSyntax", src, err)
		}
	}
}

func TestIsComplete(t *testing.T) {
	cases := map[string]bool{
		"":                              false,
		"SELECT 1":                      false,
		"SELECT 1;":                     true,
		"SELECT 1; -- trailing":         true,
		"SELECT 1; /* open":             false,
		"SELECT ';'":                    false,
		"SELECT 1 /* ; */":              false,
		"SELECT 1;\nSELECT 2":           false,
		"CREATE SINK k TO STDOUT ;  \n": true,
	}
	for src, want := range cases {
		if got := IsComplete(src); got != want {
			t.Errorf("IsComplete(%q) = %v, want %v", src, got, want)
		}
	}
}

func TestKeywordsReservedAreKeywords(t *testing.T) {
	all := map[string]bool{}
	for _, k := range Keywords() {
		all[k] = true
	}
	for _, k := range KeywordInfo() {
		if k.Reserved != IsReserved(k.Word) {
			t.Errorf("%s: Reserved = %v, IsReserved = %v", k.Word, k.Reserved, IsReserved(k.Word))
		}
	}
	for _, w := range []string{"SELECT", "FROM", "LATERAL", "MODEL", "TENSOR", "ACCURACY"} {
		if !all[w] {
			t.Errorf("Keywords() lacks %s", w)
		}
	}
	if IsReserved("text") || !IsReserved("select") {
		t.Error("TEXT must be contextual and SELECT reserved")
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"FORM", "FROM", 1}, {"SELCT", "SELECT", 1}, {"", "AB", 2}, {"ABC", "ABC", 0}, {"KAFKA", "NATS", 4}} {
		if d := editDistance(c.a, c.b); d != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
}
