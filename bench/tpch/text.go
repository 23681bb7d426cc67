package tpch

import "strings"

// The comments of every table are substrings of one pseudo text: sentences
// of the specification's grammar (4.2.2.10) over its weighted word lists.
// dbgen's pool is 300 MB; a few MB give the same word frequencies and enough
// distinct substrings for the queries that look into comments (Q13's
// '%special%requests%', Q16's '%Customer%Complaints%').
const textPoolSize = 8 << 20

// textPool generates the pool for a seed.
func textPool(seed uint64) string {
	r := rowRng(seed, tableText, 0)
	b := make([]byte, 0, textPoolSize+256)
	for len(b) < textPoolSize {
		b = sentence(b, &r)
	}
	return string(b)
}

func sentence(b []byte, r *rng) []byte {
	for _, part := range strings.Fields(sentences.pick(r)) {
		switch part {
		case "N":
			b = nounPhrase(b, r)
		case "V":
			b = verbPhrase(b, r)
		case "P":
			b = word(b, prepositions.pick(r))
			b = word(b, "the")
			b = nounPhrase(b, r)
		case "T":
			// The terminator ends the last word: "... slyly. "
			b = append(b[:len(b)-1], terminators.pick(r)...)
			b = append(b, ' ')
		}
	}
	return b
}

func nounPhrase(b []byte, r *rng) []byte {
	for _, part := range strings.Fields(nounPhrases.pick(r)) {
		switch part {
		case "N":
			b = word(b, nouns.pick(r))
		case "J":
			b = word(b, adjectives.pick(r))
		case "J,":
			b = append(b, adjectives.pick(r)...)
			b = append(b, ", "...)
		case "D":
			b = word(b, adverbs.pick(r))
		}
	}
	return b
}

func verbPhrase(b []byte, r *rng) []byte {
	for _, part := range strings.Fields(verbPhrases.pick(r)) {
		switch part {
		case "V":
			b = word(b, verbs.pick(r))
		case "X":
			b = word(b, auxiliaries.pick(r))
		case "D":
			b = word(b, adverbs.pick(r))
		}
	}
	return b
}

func word(b []byte, w string) []byte {
	b = append(b, w...)
	return append(b, ' ')
}
