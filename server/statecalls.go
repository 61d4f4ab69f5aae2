package server

// inBatch is the turn in progress of a stored agent state, as a reader of
// its tool calls decodes it (agent.State's "batch"): each call's record
// once it finished, of type T. A turn's finished calls join the state's
// "toolCalls" with the turn's results, which a run stores with its next
// write; until then a reader lists them from here, as the agent's result
// does.
type inBatch[T any] []struct {
	Record *T `json:"record"`
}

// finished appends to calls the records of the batch's finished calls.
func (b inBatch[T]) finished(calls []T) []T {
	for _, c := range b {
		if c.Record != nil {
			calls = append(calls, *c.Record)
		}
	}
	return calls
}
