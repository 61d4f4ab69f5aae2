package claudecode

// What the external tests check that the package does not export.
const MaxSettingsSize = maxSettingsSize

var CompileMatcher = compileMatcher
