package nofollow

// SetWalkOnly makes OpenFileIn skip openat2 (true) or use it (false).
func SetWalkOnly(v bool) { walkOnly = v }
