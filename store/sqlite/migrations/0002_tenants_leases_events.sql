-- Version 2: tenants and owners, leases and versions, cursor positions for
-- runs, and the event log. The runs and approvals tables are rebuilt (SQLite
-- cannot add an AUTOINCREMENT column in place); every row is kept, in its
-- order, in the default tenant "".
CREATE TABLE runs_v2 (
	seq              INTEGER PRIMARY KEY AUTOINCREMENT,
	id               TEXT NOT NULL UNIQUE,
	tenant           TEXT NOT NULL DEFAULT '',
	owner            TEXT NOT NULL DEFAULT '',
	status           TEXT NOT NULL,
	state            TEXT,
	result           TEXT,
	config           TEXT,
	-- lease_holder is NULL when the run has no lease; lease_token is the
	-- largest token the run ever had, kept after a release.
	lease_holder     TEXT,
	lease_token      INTEGER NOT NULL DEFAULT 0,
	lease_expires_at TEXT,
	version          INTEGER NOT NULL DEFAULT 1,
	created_at       TEXT NOT NULL,
	updated_at       TEXT NOT NULL
);
INSERT INTO runs_v2 (id, status, state, result, config, created_at, updated_at)
	SELECT id, status, state, result, config, created_at, updated_at FROM runs ORDER BY created_at, rowid;
CREATE TABLE approvals_v2 (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id     TEXT NOT NULL REFERENCES runs_v2(id),
	tenant     TEXT NOT NULL DEFAULT '',
	id         TEXT NOT NULL,
	call_id    TEXT NOT NULL,
	tool       TEXT NOT NULL,
	digest     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	prompt     TEXT NOT NULL,
	request    TEXT NOT NULL,
	status     TEXT NOT NULL,
	decided_by TEXT NOT NULL DEFAULT '',
	reason     TEXT NOT NULL DEFAULT '',
	data       TEXT,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	decided_at TEXT,
	used_at    TEXT,
	expires_at TEXT,
	UNIQUE (run_id, id)
);
INSERT INTO approvals_v2 (seq, run_id, id, call_id, tool, digest, kind, prompt, request, status, decided_by, reason, data, created_at, updated_at, decided_at, used_at, expires_at)
	SELECT seq, run_id, id, call_id, tool, digest, kind, prompt, request, status, decided_by, reason, data, created_at, updated_at, decided_at, used_at, expires_at FROM approvals ORDER BY seq;
DROP TABLE approvals;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
ALTER TABLE approvals_v2 RENAME TO approvals;
CREATE INDEX runs_tenant ON runs(tenant, seq);
CREATE INDEX runs_status ON runs(status, seq);
CREATE INDEX approvals_tenant ON approvals(tenant, seq);
CREATE INDEX approvals_run ON approvals(run_id, seq);
CREATE INDEX approvals_status ON approvals(status);
CREATE INDEX approvals_id ON approvals(id);
CREATE TABLE events (
	seq    INTEGER PRIMARY KEY AUTOINCREMENT,
	tenant TEXT NOT NULL,
	run_id TEXT NOT NULL DEFAULT '',
	type   TEXT NOT NULL,
	time   TEXT NOT NULL,
	data   TEXT
);
CREATE INDEX events_run ON events(run_id, seq);
CREATE INDEX events_tenant ON events(tenant, seq);
