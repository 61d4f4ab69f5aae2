-- Version 3: who acted for the one who decided (an administrator answering
-- for a person) gets its own column. decided_by keeps a principal's text
-- form ("person:alice"); rows written before hold a bare name ("alice") or,
-- for an administrator's answer, "alice (by root with --admin)", which the
-- store reads as decided by alice with actor root.
ALTER TABLE approvals ADD COLUMN actor TEXT NOT NULL DEFAULT '';
