package agent

import "github.com/tollgate-dev/tollgate/gate"

// What the tests read of a State beyond its methods.

func StateVersionOf(s *State) int           { return s.s.Version }
func StateTurn(s *State) int                { return s.s.Turn }
func StateSeq(s *State) int64               { return s.s.Seq }
func StateToolCalls(s *State) []gate.Record { return s.s.finishedCalls() }
