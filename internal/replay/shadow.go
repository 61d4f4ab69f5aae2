package replay

import (
	"cmp"
	"iter"
	"slices"

	"github.com/tollgate-dev/tollgate/approval"
)

// RecordedShadow counts the shadow votes recorded beside the decisions of
// calls (what the shadow rules in force then would have voted), by rule
// and vote, sorted by rule then vote.
func RecordedShadow(calls iter.Seq[Call]) []ShadowCount {
	counts := map[ShadowCount]int{}
	for c := range calls {
		for _, v := range c.Shadow {
			counts[ShadowCount{Rule: v.Source.String(), Decision: approval.Effect(v.Decision)}]++
		}
	}
	return sortedCounts(counts)
}

// sortedCounts returns counts as a list sorted by rule, then vote.
func sortedCounts(counts map[ShadowCount]int) []ShadowCount {
	out := []ShadowCount{}
	for k, n := range counts {
		k.Count = n
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b ShadowCount) int {
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(rank(a.Decision), rank(b.Decision)))
	})
	return out
}
