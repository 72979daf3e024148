-- A session's character (get_character_info) and its variables
-- (get_variable / set_variable). Existing sessions have no character and
-- no variables; nothing else changes.
ALTER TABLE sessions ADD COLUMN character_json TEXT;

-- One row per variable; value is the JSON text. Deleting a session
-- deletes its rows (store.DeleteSession, in the same transaction).
CREATE TABLE session_variables (
    account_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (account_id, session_id, name)
);
