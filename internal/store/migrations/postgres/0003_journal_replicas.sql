-- The processes that share this journal, for the read barrier of the
-- journal's spool (store/replicas.go): a reader asks every process to apply
-- its spool (NOTIFY with a number from journal_flush_requests) and waits
-- until each live one has answered that number (acked).
CREATE TABLE journal_replicas (
    instance_id TEXT PRIMARY KEY,
    acked       BIGINT NOT NULL DEFAULT 0,
    joined_at   BIGINT NOT NULL
);
CREATE SEQUENCE journal_flush_requests;
