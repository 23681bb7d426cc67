package eval

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tierflow/tierflow/operators/functions"
)

// A literal LIKE pattern's matcher (pieces between '%' found with
// strings.Index) answers as the anchored regular expression does, on
// random patterns of 'a', 'b' and '%' and random strings of 'a' and 'b'
// (short alphabets make the overlaps that a wrong greedy rule would get
// wrong), and on patterns it leaves to the expression ('_', escapes).
func TestLikeMatcherAgreesWithRegexp(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	draw := func(alphabet string, n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	pats := []string{"%", "%%", "", "a", "%a", "a%", "%a%", "a%a", "%ab%ba%", "ab%ba", `a\%b%`, "a_b%", "%special%requests%"}
	for range 300 {
		pats = append(pats, draw("ab%", r.IntN(7)))
	}
	strs := []string{"", "a", "ab", "aba", "special requests", "no special deposits requests"}
	for range 200 {
		strs = append(strs, draw("ab", r.IntN(9)))
	}
	for _, p := range pats {
		m, err := matcher(p, false)
		if err != nil {
			t.Fatal(err)
		}
		re, err := likeRegexp(p, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strs {
			if got, want := m(s), re.MatchString(s); got != want {
				t.Fatalf("%q LIKE %q: %v, want %v", s, p, got, want)
			}
		}
	}
}

// BenchmarkLikePieces: TPC-H Q13's o_comment NOT LIKE '%special%requests%'
// over comments of its length, the backtracking regular expression it was
// (baseline) and the pieces matcher, alternating; ratio is the matcher's
// time over the baseline's.
func BenchmarkLikePieces(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	words := strings.Fields("special requests deposits furiously final accounts carefully regular packages ideas pending")
	comments := make([]string, 4096)
	for i := range comments {
		var sb strings.Builder
		for sb.Len() < 19+r.IntN(60) {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(' ')
		}
		comments[i] = sb.String()
	}
	const p = "%special%requests%"
	m, err := matcher(p, false)
	if err != nil {
		b.Fatal(err)
	}
	re, err := likeRegexp(p, false)
	if err != nil {
		b.Fatal(err)
	}
	var base, now time.Duration
	n := 0
	for range b.N {
		t0 := time.Now()
		for _, c := range comments {
			if re.MatchString(c) {
				n++
			}
		}
		t1 := time.Now()
		for _, c := range comments {
			if m(c) {
				n--
			}
		}
		base, now = base+t1.Sub(t0), now+time.Since(t1)
	}
	if n != 0 {
		b.Fatalf("the two disagree on %d comments", n)
	}
	b.ReportMetric(float64(now)/float64(base), "ratio")
}

// A LIKE whose pattern is a column compiles each distinct pattern once and
// keeps at most functions.PatternCacheEntries of them: a column of distinct patterns (s LIKE
// s || '%') kept one per row for the whole query, 1.6 GB over 500,000 rows
// outside the query's charged memory. A repeated pattern is still served
// from the cache.
func TestLikePatternCacheIsBounded(t *testing.T) {
	n := &likeNode{}
	for i := range 5 * functions.PatternCacheEntries {
		p := "k" + strings.Repeat("x", i%7) + "%" + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
		re, err := n.regexp(p)
		if err != nil {
			t.Fatal(err)
		}
		if s := "k" + strings.Repeat("x", i%7) + "zz" + string(rune('a'+i%26)) + strings.Repeat("y", i/26); !re.MatchString(s) {
			t.Fatalf("%q LIKE %q: no match", s, p)
		}
		if held, _ := n.cache.Held(); held > functions.PatternCacheEntries {
			t.Fatalf("after %d patterns the cache holds %d, want at most %d", i+1, held, functions.PatternCacheEntries)
		}
	}
	a, _ := n.regexp("same%")
	b, _ := n.regexp("same%")
	if a != b {
		t.Error("a repeated pattern was compiled again")
	}
}
