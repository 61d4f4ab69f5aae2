-- Version 1: runs, their approvals, the event log, and the counters that
-- number them.
--
-- counters holds the last position given to a run, an approval and an
-- event. A transaction takes the next positions with an UPDATE of the row,
-- which locks it until the transaction ends: writers of one kind are
-- serialised, so positions are committed in order and a reader never sees
-- position n+1 before n (a sequence would not promise that).
CREATE TABLE counters (
	name TEXT PRIMARY KEY,
	last BIGINT NOT NULL
);
INSERT INTO counters (name, last) VALUES ('runs', 0), ('approvals', 0), ('events', 0);

CREATE TABLE runs (
	id               TEXT PRIMARY KEY,
	-- seq is the run's position in listings (counters.runs).
	seq              BIGINT NOT NULL UNIQUE,
	tenant           TEXT NOT NULL,
	owner            TEXT NOT NULL DEFAULT '',
	status           TEXT NOT NULL,
	state            JSON,
	result           JSON,
	config           JSON,
	-- lease_holder is NULL when the run has no lease; lease_token is the
	-- largest token the run ever had, kept after a release.
	lease_holder     TEXT,
	lease_token      BIGINT NOT NULL DEFAULT 0,
	lease_expires_at TIMESTAMPTZ,
	version          BIGINT NOT NULL,
	created_at       TIMESTAMPTZ NOT NULL,
	updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX runs_tenant ON runs (tenant, seq);
CREATE INDEX runs_status ON runs (tenant, status, seq);
CREATE INDEX runs_owner ON runs (tenant, owner, seq);

CREATE TABLE approvals (
	run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	id         TEXT NOT NULL,
	-- seq is the approval's position in listings (counters.approvals).
	seq        BIGINT NOT NULL UNIQUE,
	tenant     TEXT NOT NULL,
	call_id    TEXT NOT NULL,
	tool       TEXT NOT NULL,
	digest     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	prompt     TEXT NOT NULL,
	request    JSON NOT NULL,
	status     TEXT NOT NULL,
	decided_by TEXT NOT NULL DEFAULT '',
	reason     TEXT NOT NULL DEFAULT '',
	data       JSON,
	created_at TIMESTAMPTZ NOT NULL,
	updated_at TIMESTAMPTZ NOT NULL,
	decided_at TIMESTAMPTZ,
	used_at    TIMESTAMPTZ,
	expires_at TIMESTAMPTZ,
	PRIMARY KEY (run_id, id)
);
CREATE INDEX approvals_tenant ON approvals (tenant, seq);
CREATE INDEX approvals_status ON approvals (tenant, status, seq);
CREATE INDEX approvals_id ON approvals (id);
CREATE INDEX approvals_due ON approvals (expires_at) WHERE status IN ('pending', 'approved') AND expires_at IS NOT NULL;

CREATE TABLE events (
	-- seq is store-wide, from counters.events.
	seq    BIGINT PRIMARY KEY,
	tenant TEXT NOT NULL,
	-- run_id is NULL for an event of the store as a whole.
	run_id TEXT REFERENCES runs (id) ON DELETE CASCADE,
	type   TEXT NOT NULL,
	time   TIMESTAMPTZ NOT NULL,
	data   JSON
);
CREATE INDEX events_run ON events (run_id, seq);
CREATE INDEX events_tenant ON events (tenant, seq);
