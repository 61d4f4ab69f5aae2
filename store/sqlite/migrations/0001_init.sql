-- Version 1: runs and their approvals.
CREATE TABLE IF NOT EXISTS runs (
	id         TEXT PRIMARY KEY,
	status     TEXT NOT NULL,
	state      TEXT,
	result     TEXT,
	config     TEXT,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_status ON runs(status);
CREATE TABLE IF NOT EXISTS approvals (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id     TEXT NOT NULL REFERENCES runs(id),
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
CREATE INDEX IF NOT EXISTS approvals_status ON approvals(status);
CREATE INDEX IF NOT EXISTS approvals_id ON approvals(id);
