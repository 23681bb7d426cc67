package lang

import (
	"os"
	"testing"
)

func BenchmarkParseAICity(b *testing.B) {
	src, err := os.ReadFile("../examples/aicity/query.sql")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse("q.sql", string(src)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseError(b *testing.B) {
	for b.Loop() {
		if _, err := Parse("q.sql", "SHOW MODELS;\nCREATE VIEW v AS SELECT a FROM t"); err == nil {
			b.Fatal("no error")
		}
	}
}

func BenchmarkFormatAICity(b *testing.B) {
	src, err := os.ReadFile("../examples/aicity/query.sql")
	if err != nil {
		b.Fatal(err)
	}
	s, err := Parse("q.sql", string(src))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = Format(s)
	}
}
