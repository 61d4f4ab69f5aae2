package storeimpl

// Rows is a query's result as a listing reads it: database/sql's *Rows and
// pgx's Rows both are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ReadPage reads one page of a listing from rows, the result of a query
// for limit+1 records in the listing's order: at most limit records, read
// with scan (which returns a record and its position), and the cursor of
// the next page of the listing kind ([EncodeCursor]), empty when rows held
// no more. The caller closes rows.
func ReadPage[T any](rows Rows, limit int, kind string, scan func(Rows) (T, int64, error)) ([]T, string, error) {
	var recs []T
	var last int64
	for rows.Next() {
		if len(recs) == limit {
			return recs, EncodeCursor(kind, last), nil
		}
		rec, pos, err := scan(rows)
		if err != nil {
			return nil, "", err
		}
		recs, last = append(recs, rec), pos
	}
	return recs, "", rows.Err()
}
