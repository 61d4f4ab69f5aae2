package claudecode

// What the external tests check that the package does not export.
const MaxSettingsSize = maxSettingsSize

var CompileMatcher = compileMatcher

// Add joins o to s, as LoadFiles joins files.
func (s *Settings) Add(o *Settings) *Settings { return s.add(o) }
