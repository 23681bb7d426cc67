package lang

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2/lexer"
)

// byRules is what regexLexer makes of src: its tokens, EOF last, or an
// error.
func byRules(src string) ([]lexer.Token, error) {
	l, err := regexLexer.LexString("x.sql", src)
	if err != nil {
		return nil, err
	}
	var out []lexer.Token
	for {
		t, err := l.Next()
		if err != nil {
			return out, err
		}
		out = append(out, t)
		if t.EOF() {
			return out, nil
		}
	}
}

// sameAsRules fails t when scanASCII lexes src otherwise than regexLexer
// does; it says whether scanASCII took src.
func sameAsRules(t *testing.T, src string) bool {
	t.Helper()
	got, ok := scanASCII("x.sql", src)
	if !ok {
		return false
	}
	want, err := byRules(src)
	if err != nil {
		t.Fatalf("%q: scanned by hand, but the rules refuse it: %v", src, err)
	}
	for _, tok := range want {
		if tokenNames[tok.Type] == "Unterminated" {
			t.Fatalf("%q: scanned by hand, but the rules see an unterminated comment", src)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nby hand   %v\nby rules  %v", src, got, want)
	}
	return true
}

// The hand lexer makes the rules' tokens of every script shipped, and of
// the edges of each rule; what it does not take, the rules lex.
func TestASCIILexerMatchesRules(t *testing.T) {
	var scripts []string
	for _, s := range validScripts(t) {
		scripts = append(scripts, s)
	}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == ".cache" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".sql") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			scripts = append(scripts, string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) < 40 {
		t.Fatalf("only %d scripts found", len(scripts))
	}
	for _, s := range scripts {
		if _, err := byRules(s); err == nil && isASCII(s) && !sameAsRules(t, s) {
			t.Errorf("a shipped script was left to the rules: %.80q", s)
		}
	}
	edges := []string{
		"", " ", "\t\r\n\f x", "\v", "select SELECT Select selected select_ select1 _select",
		"AS ASC as_ asc1 DESC DESCRIBE", "1 1. 1.5 .5 . 1e5 1E+5 1e-5 1e 1e+ 1.e5 1..2 .e5 12abc 1.5.6",
		"'a' 'a''b' 'a''' '' '''' 'it''s' 'x", `"a" "a""b" "" """" "x`, "'a'' b", `"a"" b`,
		"-- c\nx", "--", "-- only", "/* c */x", "/**/", "/*/", "/* open", "a/*b*/c", "a--b\n-c",
		"a::b a//b a<>b a!=b a<=b a>=b a||b a!b a|b a:b", "-+*/%=<>(),.;[]", "x ? y", "x @ y", "x # y",
		"x $ y", "x ` y", "x ~ y", "x ^ y", "x & y", "x { y } z", "é", "select 'é'", "\x00", "a\nb\n\nc  d",
	}
	for _, s := range edges {
		sameAsRules(t, s)
	}
	// Random strings over the characters every rule turns on.
	const alphabet = "aAsSeEcCkK_09.+-*/'\"|:!<>=(),;[] \n\t\f\r\vxX\\"
	r := rand.New(rand.NewPCG(1, 2))
	took := 0
	for range 20000 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if sameAsRules(t, string(b)) {
			took++
		}
	}
	if took < 2000 {
		t.Fatalf("the hand lexer took only %d of 20000 random strings", took)
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// FuzzASCIILexer: whatever the hand lexer takes, it lexes as the rules do.
func FuzzASCIILexer(f *testing.F) {
	for _, s := range validScripts(f) {
		f.Add(s)
	}
	f.Add("'a''b' \"x\"\"y\" 1.5e3 .5 -- c\n/* d */ a::b")
	f.Fuzz(func(t *testing.T, src string) { sameAsRules(t, src) })
}
