package serverapi

// AgentInfo is an agent of the server, as GET /v1/agents lists it.
type AgentInfo struct {
	Name string `json:"name"`
	// Model is the model reference ("openai:gpt-4.1-mini").
	Model string `json:"model"`
	// Autonomy is the agent's configured autonomy level (the tenant's or a
	// run's may override it).
	Autonomy string `json:"autonomy,omitempty"`
}
