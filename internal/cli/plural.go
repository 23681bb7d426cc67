package cli

import (
	"fmt"
	"strings"
)

// Count is n and noun, the noun plural unless n is 1: "1 row", "2 rows",
// "0 queries". Every count a person reads goes through it, so none says
// "on 1 workers".
func Count[N ~int | ~int32 | ~int64 | ~uint32 | ~uint64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %s", n, Plural(noun))
}

// Plural is noun's regular English plural (query -> queries, batch ->
// batches, row -> rows).
func Plural(noun string) string {
	switch {
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}
