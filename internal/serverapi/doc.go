// Package serverapi holds the JSON of package server's HTTP API: the
// bodies of requests (StartRunRequest, DecisionRequest, ...), the views
// and pages of responses (RunView, ApprovalView, RunPage, ...), the
// events of its streams (StreamEvent, WSMessage), and its problem details
// (Problem and the Problem* types). The server writes and reads them; the
// command, as a client of a server (`tollgate gateway --server`, the hook
// commands), and the tests read and write the same. The contract itself
// is package server's documentation.
package serverapi
