package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"

	msqlite "modernc.org/sqlite"
)

// maxCachedStmts bounds the statements a connection keeps prepared. The
// store runs a few dozen distinct queries; a query past the bound is
// prepared for each use, as without the cache.
const maxCachedStmts = 128

// cachingConnector opens the driver's connections so that each keeps the
// statements it prepared, for the next query of the same text on it: the
// driver otherwise prepares (parses and plans) every query again, which was
// a fifth of a served run's CPU. It hides the driver's ExecerContext and
// QueryerContext, so that database/sql prepares each query through the
// connection's cache, and closes the statement after it, which gives it
// back.
type cachingConnector struct{ driver.Connector }

func newCachingConnector(dsn string) (driver.Connector, error) {
	c, err := msqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return cachingConnector{c}, nil
}

// Connect implements driver.Connector.
func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cachingConn{conn: conn, idle: map[string][]driver.Stmt{}}, nil
}

// driverConn is what the store needs of the driver's connection.
type driverConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.SessionResetter
	driver.Validator
}

// cachingConn is a connection with its prepared statements, each either in
// use by one query (handed out) or idle in idle, by query text.
type cachingConn struct {
	conn   driver.Conn
	mu     sync.Mutex
	idle   map[string][]driver.Stmt
	kept   int // statements prepared and kept, idle or in use
	closed bool
}

func (c *cachingConn) dc() (driverConn, error) {
	dc, ok := c.conn.(driverConn)
	if !ok {
		return nil, errors.New("sqlite: the driver's connection lacks a method the store needs")
	}
	return dc, nil
}

// Prepare implements driver.Conn.
func (c *cachingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext implements driver.ConnPrepareContext: an idle statement of
// query, or a new one, kept when there is room.
func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.mu.Lock()
	if l := c.idle[query]; len(l) > 0 {
		s := l[len(l)-1]
		c.idle[query] = l[:len(l)-1]
		c.mu.Unlock()
		return &cachedStmt{Stmt: s, c: c, query: query}, nil
	}
	keep := c.kept < maxCachedStmts
	if keep {
		c.kept++
	}
	c.mu.Unlock()
	dc, err := c.dc()
	if err != nil {
		return nil, err
	}
	s, err := dc.PrepareContext(ctx, query)
	if err != nil || !keep {
		if keep {
			c.mu.Lock()
			c.kept--
			c.mu.Unlock()
		}
		return s, err
	}
	return &cachedStmt{Stmt: s, c: c, query: query}, nil
}

// Close implements driver.Conn: it closes the kept statements, then the
// connection. Statements in use are closed as they are given back.
func (c *cachingConn) Close() error {
	c.mu.Lock()
	c.closed = true
	var errs []error
	for _, l := range c.idle {
		for _, s := range l {
			errs = append(errs, s.Close())
		}
	}
	c.idle = nil
	c.mu.Unlock()
	return errors.Join(append(errs, c.conn.Close())...)
}

// Begin implements driver.Conn.
func (c *cachingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx.
func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	dc, err := c.dc()
	if err != nil {
		return nil, err
	}
	return dc.BeginTx(ctx, opts)
}

// ResetSession implements driver.SessionResetter.
func (c *cachingConn) ResetSession(ctx context.Context) error {
	dc, err := c.dc()
	if err != nil {
		return driver.ErrBadConn
	}
	return dc.ResetSession(ctx)
}

// IsValid implements driver.Validator.
func (c *cachingConn) IsValid() bool {
	dc, err := c.dc()
	return err == nil && dc.IsValid()
}

// cachedStmt is a kept statement handed out for one query; Close gives it
// back to its connection.
type cachedStmt struct {
	driver.Stmt
	c     *cachingConn
	query string
}

// Close gives the statement back, or closes it when its connection was
// closed meanwhile.
func (s *cachedStmt) Close() error {
	s.c.mu.Lock()
	if !s.c.closed {
		s.c.idle[s.query] = append(s.c.idle[s.query], s.Stmt)
		s.c.mu.Unlock()
		return nil
	}
	s.c.mu.Unlock()
	return s.Stmt.Close()
}

// ExecContext implements driver.StmtExecContext.
func (s *cachedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	ex, ok := s.Stmt.(driver.StmtExecContext)
	if !ok {
		return nil, errors.New("sqlite: the driver's statement lacks ExecContext")
	}
	return ex.ExecContext(ctx, args)
}

// QueryContext implements driver.StmtQueryContext.
func (s *cachedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("sqlite: the driver's statement lacks QueryContext")
	}
	return q.QueryContext(ctx, args)
}
