package records

// LineOf is the line of a record, for the external tests.
var LineOf = lineOf
