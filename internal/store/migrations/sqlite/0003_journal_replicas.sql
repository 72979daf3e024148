-- Kept parallel to PostgreSQL's 0003 (the replicas of a shared journal).
-- A SQLite journal belongs to one server and needs no read barrier, so
-- nothing uses this table here.
CREATE TABLE journal_replicas (
    instance_id TEXT PRIMARY KEY,
    acked       INTEGER NOT NULL DEFAULT 0,
    joined_at   INTEGER NOT NULL
);
