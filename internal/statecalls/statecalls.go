// Package statecalls lists the tool calls of an agent state the way the
// agent's result lists them: the state's records ("toolCalls"), then the
// records of the calls of its turn in progress that finished ("batch",
// each call's "record" once it finished). A turn's finished calls join
// "toolCalls" with the turn's results, which a run stores with its next
// write; until then they are in the batch only.
//
// The agent lists its own state's calls with [Append]; the readers of a
// stored state (the server's views, the replay of a store's calls) decode
// its batch as a list of [Call] and list it with [Append] too.
package statecalls

// Call is one call of an agent state's turn in progress, as a reader of the
// stored state decodes it: its record once it finished (nil before), of
// type T (the gate's record, or the part of it the reader reads).
type Call[T any] struct {
	Record *T `json:"record"`
}

// Finished returns c's record, nil while the call has not finished.
func (c Call[T]) Finished() *T { return c.Record }

// Finisher is a call of a turn in progress: Finished returns its record
// once it finished, nil before.
type Finisher[T any] interface {
	Finished() *T
}

// Append appends to calls the records of the finished calls of batch, in
// the batch's order (the model's), and returns the extended slice.
func Append[T any, C Finisher[T]](calls []T, batch []C) []T {
	for _, c := range batch {
		if r := c.Finished(); r != nil {
			calls = append(calls, *r)
		}
	}
	return calls
}
