-- Version 6: every accepted rule of the rule layer carries the MAC of the
-- store's decision key (store.Sealer). Rules accepted before have none, and
-- are read as unsealed: they apply to nothing until proposed and accepted
-- again.
ALTER TABLE layer_rules ADD COLUMN mac TEXT NOT NULL DEFAULT '';
