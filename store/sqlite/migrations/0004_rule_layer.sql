-- Version 4: each tenant's rule layer (store.Layers): the rules proposed
-- from decisions and accepted by administrators, and the layer's history,
-- one row per version.
CREATE TABLE layer_rules (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	tenant      TEXT NOT NULL,
	id          TEXT NOT NULL,
	text        TEXT NOT NULL,
	effect      TEXT NOT NULL,
	tool        TEXT NOT NULL DEFAULT '',
	source      TEXT NOT NULL DEFAULT '',
	status      TEXT NOT NULL,
	proposed_by TEXT NOT NULL,
	proposed_at TEXT NOT NULL,
	accepted_by TEXT NOT NULL DEFAULT '',
	accepted_at TEXT,
	version     INTEGER NOT NULL DEFAULT 0,
	removed_by  TEXT NOT NULL DEFAULT '',
	removed_at  TEXT,
	UNIQUE (tenant, id)
);
CREATE TABLE layer_changes (
	tenant       TEXT NOT NULL,
	version      INTEGER NOT NULL,
	action       TEXT NOT NULL,
	rule_id      TEXT NOT NULL,
	text         TEXT NOT NULL,
	effect       TEXT NOT NULL,
	tool         TEXT NOT NULL,
	by_principal TEXT NOT NULL,
	at           TEXT NOT NULL,
	PRIMARY KEY (tenant, version)
);
