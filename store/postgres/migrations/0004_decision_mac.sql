-- Version 4: every decision carries the MAC of the store's decision key
-- (store.Sealer). Rows decided before have none, and are read as unverified:
-- their requests are declined, never run.
ALTER TABLE approvals ADD COLUMN mac TEXT NOT NULL DEFAULT '';
