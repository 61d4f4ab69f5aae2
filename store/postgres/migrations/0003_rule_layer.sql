-- Version 3: each tenant's rule layer (store.Layers): the rules proposed
-- from decisions and accepted by administrators, and the layer's history,
-- one row per version.
CREATE TABLE layer_rules (
	seq         BIGSERIAL PRIMARY KEY,
	tenant      TEXT NOT NULL,
	id          TEXT NOT NULL,
	text        TEXT NOT NULL,
	effect      TEXT NOT NULL,
	tool        TEXT NOT NULL DEFAULT '',
	source      TEXT NOT NULL DEFAULT '',
	status      TEXT NOT NULL,
	proposed_by TEXT NOT NULL,
	proposed_at TIMESTAMPTZ NOT NULL,
	accepted_by TEXT NOT NULL DEFAULT '',
	accepted_at TIMESTAMPTZ,
	version     BIGINT NOT NULL DEFAULT 0,
	removed_by  TEXT NOT NULL DEFAULT '',
	removed_at  TIMESTAMPTZ,
	CONSTRAINT layer_rules_tenant_id UNIQUE (tenant, id)
);
CREATE TABLE layer_changes (
	tenant       TEXT NOT NULL,
	version      BIGINT NOT NULL,
	action       TEXT NOT NULL,
	rule_id      TEXT NOT NULL,
	text         TEXT NOT NULL,
	effect       TEXT NOT NULL,
	tool         TEXT NOT NULL,
	by_principal TEXT NOT NULL,
	at           TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (tenant, version)
);
