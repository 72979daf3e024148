-- river's schema, versions 1 to 8, rendered from github.com/riverqueue/river v0.51.2 by TestRiverMigrationsAreRiversOwn (-update).

-- river 001_create river migration
CREATE TABLE river_migration (
    id integer PRIMARY KEY,
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    version integer NOT NULL,
    CONSTRAINT version CHECK (version >= 1)
);

CREATE UNIQUE INDEX river_migration_version_idx ON river_migration (version);

-- river 002_initial schema
--
-- Normally `river_job` and `river_job_notify()` are raised here, but since
-- SQLite was added well after 002 came about, we push that to version 006 index.
--

-- Dummy `river_job` table so that there's something to truncate in tests when
-- migrated to this version specifically.
CREATE TABLE river_job (
    id integer PRIMARY KEY
);

CREATE TABLE river_leader (
    elected_at timestamp NOT NULL,
    expires_at timestamp NOT NULL,
    leader_id text NOT NULL,
    name text PRIMARY KEY NOT NULL,
    CONSTRAINT name_length CHECK (length(name) > 0 AND length(name) < 128),
    CONSTRAINT leader_id_length CHECK (length(leader_id) > 0 AND length(leader_id) < 128)
);


-- river 003_river job tags non null
--
-- Normally `river_job.tags` is set to `NOT NULL` with a `DEFAULT` here, but since
-- SQLite was added well after 003 came about, we push that to version 006 index.
--

SELECT 1;


-- river 004_pending and more
--
-- Normally, args and metadata both become `NOT NULL`, `pending` is added, and
-- the constraint `finalized_at` is changed, but because SQLite was added later,
-- we've just pushed all of this to an initial `river_job` creation in 006.
--

--
-- Create table `river_queue`.
--

CREATE TABLE river_queue (
    name text PRIMARY KEY NOT NULL,
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    metadata blob NOT NULL DEFAULT (json('{}')),
    paused_at timestamp,
    updated_at timestamp NOT NULL
);

--
-- Alter `river_leader` to add a default value of 'default` to `name`. SQLite
-- doesn't allow schema modifications, so this redefines the table entirely.
--

DROP TABLE river_leader;

CREATE TABLE river_leader (
    elected_at timestamp NOT NULL,
    expires_at timestamp NOT NULL,
    leader_id text NOT NULL,
    name text PRIMARY KEY NOT NULL DEFAULT 'default' CHECK (name = 'default'),
    CONSTRAINT name_length CHECK (length(name) > 0 AND length(name) < 128),
    CONSTRAINT leader_id_length CHECK (length(leader_id) > 0 AND length(leader_id) < 128)
);

INSERT INTO river_migration (version) VALUES (1), (2), (3), (4);

-- river 005_migration unique client
--
-- Rebuild the migration table so it's based on `(line, version)`.
--

DROP INDEX river_migration_version_idx;

ALTER TABLE river_migration
    RENAME TO river_migration_old;

CREATE TABLE river_migration (
    line text NOT NULL,
    version integer NOT NULL,
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT line_length CHECK (length(line) > 0 AND length(line) < 128),
    CONSTRAINT version_gte_1 CHECK (version >= 1),
    PRIMARY KEY (line, version)
);

INSERT INTO river_migration
    (created_at, line, version)
SELECT created_at, 'main', version
FROM river_migration_old;

DROP TABLE river_migration_old;

--
-- Normally, `unique_key` and an index are added here, but because SQLite was
-- added later, we've just pushed all of this to an initial `river_job` creation
-- in 006.
--

--
-- Create `river_client` and derivative.
--
-- This feature hasn't quite yet been implemented, but we're taking advantage of
-- the migration to add the schema early so that we can add it later without an
-- additional migration.
--

CREATE TABLE river_client (
    id text PRIMARY KEY NOT NULL,
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    metadata blob NOT NULL DEFAULT (json('{}')),
    paused_at timestamp,
    updated_at timestamp NOT NULL,
    CONSTRAINT name_length CHECK (length(id) > 0 AND length(id) < 128)
);

-- Differs from `river_queue` in that it tracks the queue state for a particular
-- active client.
CREATE TABLE river_client_queue (
    river_client_id text NOT NULL REFERENCES river_client (id) ON DELETE CASCADE,
    name text NOT NULL,
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    max_workers integer NOT NULL DEFAULT 0,
    metadata blob NOT NULL DEFAULT (json('{}')),
    num_jobs_completed integer NOT NULL DEFAULT 0,
    num_jobs_running integer NOT NULL DEFAULT 0,
    updated_at timestamp NOT NULL,
    PRIMARY KEY (river_client_id, name),
    CONSTRAINT name_length CHECK (length(name) > 0 AND length(name) < 128),
    CONSTRAINT num_jobs_completed_zero_or_positive CHECK (num_jobs_completed >= 0),
    CONSTRAINT num_jobs_running_zero_or_positive CHECK (num_jobs_running >= 0)
);

-- river 006_bulk unique
-- Only drops the trivial `river_job` we created in 002 which puts a placeholder
-- in place so that the right tables exist in the right versions. We don't
-- bother migrating any job data because it's not possible to have had any real
-- jobs by that point because this version (006) preexists the addition of SQLite.
DROP TABLE river_job;

CREATE TABLE river_job (
    id integer PRIMARY KEY, -- SQLite aliases this to ROWID, which may reuse deleted IDs.
    args blob NOT NULL DEFAULT '{}',
    attempt integer NOT NULL DEFAULT 0,
    attempted_at timestamp,
    attempted_by blob, -- json
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    errors blob, -- json
    finalized_at timestamp,
    kind text NOT NULL,
    max_attempts integer NOT NULL,
    metadata blob NOT NULL DEFAULT (json('{}')),
    priority integer NOT NULL DEFAULT 1,
    queue text NOT NULL DEFAULT 'default',
    state text NOT NULL DEFAULT 'available',
    scheduled_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    tags blob NOT NULL DEFAULT (json('[]')),
    unique_key blob,
    unique_states integer,
    CONSTRAINT finalized_or_finalized_at_null CHECK (
        (finalized_at IS NULL AND state NOT IN ('cancelled', 'completed', 'discarded')) OR
        (finalized_at IS NOT NULL AND state IN ('cancelled', 'completed', 'discarded'))
    ),
    CONSTRAINT priority_in_range CHECK (priority >= 1 AND priority <= 4),
    CONSTRAINT queue_length CHECK (length(queue) > 0 AND length(queue) < 128),
    CONSTRAINT kind_length CHECK (length(kind) > 0 AND length(kind) < 128),
    CONSTRAINT state_valid CHECK (state IN ('available', 'cancelled', 'completed', 'discarded', 'pending', 'retryable', 'running', 'scheduled'))
);

-- All these indexes are normally brought up in version 002.
CREATE INDEX river_job_kind ON river_job (kind);
CREATE INDEX river_job_state_and_finalized_at_index ON river_job (state, finalized_at) WHERE finalized_at IS NOT NULL;
CREATE INDEX river_job_prioritized_fetching_index ON river_job (state, queue, priority, scheduled_at, id);

-- Not raised because SQLite doesn't support Gin indexes. These aren't used in
-- River anyway.
-- CREATE INDEX river_job_args_index ON river_job USING GIN(args);
-- CREATE INDEX river_job_metadata_index ON river_job USING GIN(metadata);

-- SQLite doesn't support SQL functions, so where the bit extraction logic below
-- goes in the `river_job_state_in_bitmask` function in Postgres, here it's
-- baked right into the index. Use of helpers that don't exist in SQLite like
-- `get_bit` are also dropped by necessity.
CREATE UNIQUE INDEX river_job_unique_idx ON river_job (unique_key)
    WHERE unique_key IS NOT NULL
        AND unique_states IS NOT NULL
        AND CASE state
            WHEN 'available' THEN unique_states & (1 << 0)
            WHEN 'cancelled' THEN unique_states & (1 << 1)
            WHEN 'completed' THEN unique_states & (1 << 2)
            WHEN 'discarded' THEN unique_states & (1 << 3)
            WHEN 'pending'   THEN unique_states & (1 << 4)
            WHEN 'retryable' THEN unique_states & (1 << 5)
            WHEN 'running'   THEN unique_states & (1 << 6)
            WHEN 'scheduled' THEN unique_states & (1 << 7)
            ELSE 0
        END >= 1;


-- river 007_notification outbox sqlite jsonb and sql cleanup
--
-- Notification outbox.
--

CREATE TABLE river_notification (
    id integer PRIMARY KEY AUTOINCREMENT,
    created_at timestamp NOT NULL DEFAULT (datetime('now', 'subsec')),
    payload text NOT NULL,
    topic text NOT NULL,
    CONSTRAINT topic_length CHECK (length(topic) > 0 AND length(topic) < 128)
);

CREATE INDEX river_notification_created_at_idx ON river_notification (created_at);
CREATE INDEX river_notification_topic_id_idx ON river_notification (topic, id);

--
-- SQLite JSONB conversion.
--
-- Convert JSON text columns to JSONB binary format for more efficient storage
-- and processing, and update column defaults from json() to jsonb().
--
-- SQLite doesn't allow `ALTER TABLE ADD COLUMN` with non-constant defaults like
-- `jsonb('{}')`, so rebuild each affected table instead.
--

--
-- river_job
--

DROP INDEX river_job_kind;
DROP INDEX river_job_state_and_finalized_at_index;
DROP INDEX river_job_prioritized_fetching_index;
DROP INDEX river_job_unique_idx;

ALTER TABLE river_job RENAME TO river_job_old;

CREATE TABLE river_job (
    id integer PRIMARY KEY, -- SQLite aliases this to ROWID, which may reuse deleted IDs.
    args blob NOT NULL DEFAULT (jsonb('{}')),
    attempt integer NOT NULL DEFAULT 0,
    attempted_at timestamp,
    attempted_by blob, -- json
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    errors blob, -- json
    finalized_at timestamp,
    kind text NOT NULL,
    max_attempts integer NOT NULL,
    metadata blob NOT NULL DEFAULT (jsonb('{}')),
    priority integer NOT NULL DEFAULT 1,
    queue text NOT NULL DEFAULT 'default',
    state text NOT NULL DEFAULT 'available',
    scheduled_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    tags blob NOT NULL DEFAULT (jsonb('[]')),
    unique_key blob,
    unique_states integer,
    CONSTRAINT finalized_or_finalized_at_null CHECK (
        (finalized_at IS NULL AND state NOT IN ('cancelled', 'completed', 'discarded')) OR
        (finalized_at IS NOT NULL AND state IN ('cancelled', 'completed', 'discarded'))
    ),
    CONSTRAINT priority_in_range CHECK (priority >= 1 AND priority <= 4),
    CONSTRAINT queue_length CHECK (length(queue) > 0 AND length(queue) < 128),
    CONSTRAINT kind_length CHECK (length(kind) > 0 AND length(kind) < 128),
    CONSTRAINT state_valid CHECK (state IN ('available', 'cancelled', 'completed', 'discarded', 'pending', 'retryable', 'running', 'scheduled'))
);

INSERT INTO river_job (
    id,
    args,
    attempt,
    attempted_at,
    attempted_by,
    created_at,
    errors,
    finalized_at,
    kind,
    max_attempts,
    metadata,
    priority,
    queue,
    state,
    scheduled_at,
    tags,
    unique_key,
    unique_states
)
SELECT
    id,
    jsonb(args),
    attempt,
    attempted_at,
    CASE WHEN attempted_by IS NULL THEN NULL ELSE jsonb(attempted_by) END,
    created_at,
    CASE WHEN errors IS NULL THEN NULL ELSE jsonb(errors) END,
    finalized_at,
    kind,
    max_attempts,
    jsonb(metadata),
    priority,
    queue,
    state,
    scheduled_at,
    jsonb(tags),
    unique_key,
    unique_states
FROM river_job_old;

DROP TABLE river_job_old;

CREATE INDEX river_job_kind ON river_job (kind);
CREATE INDEX river_job_state_and_finalized_at_index ON river_job (state, finalized_at) WHERE finalized_at IS NOT NULL;
CREATE INDEX river_job_prioritized_fetching_index ON river_job (state, queue, priority, scheduled_at, id);
CREATE UNIQUE INDEX river_job_unique_idx ON river_job (unique_key)
    WHERE unique_key IS NOT NULL
        AND unique_states IS NOT NULL
        AND CASE state
            WHEN 'available' THEN unique_states & (1 << 0)
            WHEN 'cancelled' THEN unique_states & (1 << 1)
            WHEN 'completed' THEN unique_states & (1 << 2)
            WHEN 'discarded' THEN unique_states & (1 << 3)
            WHEN 'pending'   THEN unique_states & (1 << 4)
            WHEN 'retryable' THEN unique_states & (1 << 5)
            WHEN 'running'   THEN unique_states & (1 << 6)
            WHEN 'scheduled' THEN unique_states & (1 << 7)
            ELSE 0
        END >= 1;

--
-- river_queue
--

ALTER TABLE river_queue RENAME TO river_queue_old;

CREATE TABLE river_queue (
    name text PRIMARY KEY NOT NULL,
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    metadata blob NOT NULL DEFAULT (jsonb('{}')),
    paused_at timestamp,
    updated_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP
);

INSERT INTO river_queue (
    name,
    created_at,
    metadata,
    paused_at,
    updated_at
)
SELECT
    name,
    created_at,
    jsonb(metadata),
    paused_at,
    updated_at
FROM river_queue_old;

DROP TABLE river_queue_old;

--
-- river_client
--

ALTER TABLE river_client RENAME TO river_client_old;

CREATE TABLE river_client (
    id text PRIMARY KEY NOT NULL,
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    metadata blob NOT NULL DEFAULT (jsonb('{}')),
    paused_at timestamp,
    updated_at timestamp NOT NULL,
    CONSTRAINT name_length CHECK (length(id) > 0 AND length(id) < 128)
);

INSERT INTO river_client (
    id,
    created_at,
    metadata,
    paused_at,
    updated_at
)
SELECT
    id,
    created_at,
    jsonb(metadata),
    paused_at,
    updated_at
FROM river_client_old;

--
-- river_client_queue
--

ALTER TABLE river_client_queue RENAME TO river_client_queue_old;

CREATE TABLE river_client_queue (
    river_client_id text NOT NULL REFERENCES river_client (id) ON DELETE CASCADE,
    name text NOT NULL,
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    max_workers integer NOT NULL DEFAULT 0,
    metadata blob NOT NULL DEFAULT (jsonb('{}')),
    num_jobs_completed integer NOT NULL DEFAULT 0,
    num_jobs_running integer NOT NULL DEFAULT 0,
    updated_at timestamp NOT NULL,
    PRIMARY KEY (river_client_id, name),
    CONSTRAINT name_length CHECK (length(name) > 0 AND length(name) < 128),
    CONSTRAINT num_jobs_completed_zero_or_positive CHECK (num_jobs_completed >= 0),
    CONSTRAINT num_jobs_running_zero_or_positive CHECK (num_jobs_running >= 0)
);

INSERT INTO river_client_queue (
    river_client_id,
    name,
    created_at,
    max_workers,
    metadata,
    num_jobs_completed,
    num_jobs_running,
    updated_at
)
SELECT
    river_client_id,
    name,
    created_at,
    max_workers,
    jsonb(metadata),
    num_jobs_completed,
    num_jobs_running,
    updated_at
FROM river_client_queue_old;

DROP TABLE river_client_queue_old;
DROP TABLE river_client_old;

--
-- SQL cleanup.
--

--
-- Drop unused tables `river_client` and `river_client_queue`.
--

DROP TABLE river_client_queue;
DROP TABLE river_client;

--
-- Adds `DEFAULT 25` to `river_job.max_attempts`.
--

-- This may look odd in that we're adding a brand new column, but it's because
-- SQLite doesn't support anything beyond the most trivial DDL.

ALTER TABLE river_job
    RENAME COLUMN max_attempts TO max_attempts_old;

ALTER TABLE river_job
    ADD COLUMN max_attempts integer NOT NULL DEFAULT 25;

UPDATE river_job
SET max_attempts = max_attempts_old;

ALTER TABLE river_job
    DROP COLUMN max_attempts_old;


-- river 008_job id autoincrement
-- Rebuild river_job so automatically generated IDs are never reused after the
-- job holding the largest ID is deleted. Unlike Postgres sequences, SQLite's
-- default ROWID allocator may otherwise reuse that deleted ID.

-- Rebuilding river_job would discard schema installed by River Pro. Check
-- schema objects instead of migration records to also catch manually applied
-- Pro migrations and the legacy workflow migration line.
CREATE TEMP TABLE river_job_pro_schema_guard (
    id integer NOT NULL
);

CREATE TEMP TRIGGER river_job_pro_schema_guard_enforce
    BEFORE INSERT ON river_job_pro_schema_guard
    WHEN EXISTS (
        SELECT 1
        FROM sqlite_master
        WHERE name IN ('river_job_sequence', 'river_job_workflow_scheduling', 'river_workflow')
    )
BEGIN
    SELECT RAISE(ABORT, 'River SQLite migration 008 cannot run while River Pro schema is installed');
END;

INSERT INTO river_job_pro_schema_guard (id) VALUES (1);

DROP TRIGGER river_job_pro_schema_guard_enforce;
DROP TABLE river_job_pro_schema_guard;

DROP INDEX river_job_kind;
DROP INDEX river_job_state_and_finalized_at_index;
DROP INDEX river_job_prioritized_fetching_index;
DROP INDEX river_job_unique_idx;

ALTER TABLE river_job RENAME TO river_job_old;

CREATE TABLE river_job (
    id integer PRIMARY KEY AUTOINCREMENT,
    args blob NOT NULL DEFAULT (jsonb('{}')),
    attempt integer NOT NULL DEFAULT 0,
    attempted_at timestamp,
    attempted_by blob, -- json
    created_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    errors blob, -- json
    finalized_at timestamp,
    kind text NOT NULL,
    max_attempts integer NOT NULL DEFAULT 25,
    metadata blob NOT NULL DEFAULT (jsonb('{}')),
    priority integer NOT NULL DEFAULT 1,
    queue text NOT NULL DEFAULT 'default',
    state text NOT NULL DEFAULT 'available',
    scheduled_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
    tags blob NOT NULL DEFAULT (jsonb('[]')),
    unique_key blob,
    unique_states integer,
    CONSTRAINT finalized_or_finalized_at_null CHECK (
        (finalized_at IS NULL AND state NOT IN ('cancelled', 'completed', 'discarded')) OR
        (finalized_at IS NOT NULL AND state IN ('cancelled', 'completed', 'discarded'))
    ),
    CONSTRAINT priority_in_range CHECK (priority >= 1 AND priority <= 4),
    CONSTRAINT queue_length CHECK (length(queue) > 0 AND length(queue) < 128),
    CONSTRAINT kind_length CHECK (length(kind) > 0 AND length(kind) < 128),
    CONSTRAINT state_valid CHECK (state IN ('available', 'cancelled', 'completed', 'discarded', 'pending', 'retryable', 'running', 'scheduled'))
);

INSERT INTO river_job (
    id,
    args,
    attempt,
    attempted_at,
    attempted_by,
    created_at,
    errors,
    finalized_at,
    kind,
    max_attempts,
    metadata,
    priority,
    queue,
    state,
    scheduled_at,
    tags,
    unique_key,
    unique_states
)
SELECT
    id,
    args,
    attempt,
    attempted_at,
    attempted_by,
    created_at,
    errors,
    finalized_at,
    kind,
    max_attempts,
    metadata,
    priority,
    queue,
    state,
    scheduled_at,
    tags,
    unique_key,
    unique_states
FROM river_job_old;

DROP TABLE river_job_old;

CREATE INDEX river_job_kind ON river_job (kind);
CREATE INDEX river_job_state_and_finalized_at_index ON river_job (state, finalized_at) WHERE finalized_at IS NOT NULL;
CREATE INDEX river_job_prioritized_fetching_index ON river_job (state, queue, priority, scheduled_at, id);
CREATE UNIQUE INDEX river_job_unique_idx ON river_job (unique_key)
    WHERE unique_key IS NOT NULL
        AND unique_states IS NOT NULL
        AND CASE state
            WHEN 'available' THEN unique_states & (1 << 0)
            WHEN 'cancelled' THEN unique_states & (1 << 1)
            WHEN 'completed' THEN unique_states & (1 << 2)
            WHEN 'discarded' THEN unique_states & (1 << 3)
            WHEN 'pending'   THEN unique_states & (1 << 4)
            WHEN 'retryable' THEN unique_states & (1 << 5)
            WHEN 'running'   THEN unique_states & (1 << 6)
            WHEN 'scheduled' THEN unique_states & (1 << 7)
            ELSE 0
        END >= 1;


INSERT INTO river_migration (line, version) VALUES ('main', 5), ('main', 6), ('main', 7), ('main', 8);
