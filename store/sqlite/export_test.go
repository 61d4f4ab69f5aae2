package sqlite

// Names the tests use for the package's limits.
const (
	SchemaVersion  = schemaVersion
	MaxStoredDepth = maxStoredDepth
)
