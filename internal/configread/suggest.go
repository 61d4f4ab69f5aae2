package configread

import (
	"fmt"
	"strings"
)

// Suggest returns the word of known that word was probably meant to be
// ("modle" is "model", "Polcy" is "policy"), or "" when none is close: one
// equal but for case, else the nearest within an edit distance of 2 (1 for
// words of up to 4 bytes), the first of equals in known's order.
func Suggest(word string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(word, k) {
			return k
		}
	}
	best, bestD := "", 3
	if len(word) <= 4 {
		bestD = 2
	}
	lw := strings.ToLower(word)
	for _, k := range known {
		if d := EditDistance(lw, strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// UnknownKey returns the message for an unknown key: `unknown key "modle";
// did you mean "model"?`, or, when no known key is close, `unknown key "x"
// (want a, b or c)`.
func UnknownKey(key string, known []string) string {
	if s := Suggest(key, known); s != "" {
		return fmt.Sprintf("unknown key %q; did you mean %q?", key, s)
	}
	return fmt.Sprintf("unknown key %q (want %s)", key, OneOf(known))
}

// OneOf lists words as "a", "a or b", "a, b or c".
func OneOf(words []string) string {
	switch len(words) {
	case 0:
		return "nothing"
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// EditDistance is the Levenshtein distance between a and b, in bytes.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
