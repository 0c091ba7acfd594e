-- poolsplit_v1_entries.sql -- each row's readings kept beside LangGraph's store table.
--
-- Needs poolsplit_v1.sql. @STORE@ is the store table, schema-qualified, filled in by
-- poolsplit_integrations._pgengine.setup_entries() (this file runs with
-- search_path = pg_catalog, like poolsplit_v1.sql).
--
-- poolsplit_v1.entry holds, for each row of the store table, what the core reads of
-- the entry the row becomes (poolsplit_v1.sql's functions), computed once, when the
-- row is written: triggers on the store table keep it in the writing transaction, so
-- every snapshot sees a row and its readings together. setup() then fills in the
-- rows written before the triggers, repairs any reading that is not its row's, and
-- records in poolsplit_v1.kept that the table's readings are whole: reads use them
-- only from then on. A read checks the reading of every row it returns against the
-- row (its updated_at); a write that bypassed the triggers (session_replication_role
-- = replica, a disabled trigger) can leave a reading behind, which the read then
-- meets and answers from the rows instead -- poolsplit-postgres recheck repairs it.
--
-- Why a table beside LangGraph's and not generated columns on it: adding stored
-- columns rewrites the store table under an exclusive lock (every read and write of
-- every user waits), LangGraph's own migrations own that table, and a new version of
-- a reading would rewrite it again. This table is filled without blocking writers,
-- dropped with DROP SCHEMA poolsplit_v1 CASCADE, and leaves the store table as
-- LangGraph made it (triggers aside).

SET LOCAL search_path = pg_catalog;

CREATE TABLE IF NOT EXISTS poolsplit_v1.entry (
    prefix text NOT NULL,
    key text NOT NULL,
    updated_at timestamptz,   -- the row's updated_at these readings are of
    created_at timestamptz,   -- the row's created_at (an entry's created when its value has none)
    regular boolean NOT NULL, -- poolsplit_v1.regular(value): the readings below are exact
    active boolean,
    always boolean,
    etype text,
    cost bigint,
    base float8,
    created_us bigint,
    created_text text,        -- the value's own created (NULL: it comes from created_at)
    words text[],
    tags text[],
    project text,
    carries_user boolean,     -- the value holds a user_id that is not null
    PRIMARY KEY (prefix, key)
);
ALTER TABLE poolsplit_v1.entry ADD COLUMN IF NOT EXISTS carries_user boolean;

-- The store tables whose readings are whole: setup() has filled and repaired them.
CREATE TABLE IF NOT EXISTS poolsplit_v1.kept (
    store_table regclass PRIMARY KEY,
    repaired_at timestamptz NOT NULL
);

-- The store tables setup() has finished for, and the digest of the SQL it installed (both
-- files). A later setup() that finds its own digest here, the table kept and its trigger
-- enabled, has nothing to do and stops after a few statements whatever the table's size;
-- another digest (a new release) runs the whole install again. Re-checking every row
-- against its reading (after writes that bypassed the triggers) is an operator's command:
-- poolsplit-postgres recheck.
CREATE TABLE IF NOT EXISTS poolsplit_v1.setup_done (
    store_table regclass PRIMARY KEY,
    digest text NOT NULL,
    done_at timestamptz NOT NULL
);

-- The contextual rows of a namespace, by type, base priority and whether they have tags,
-- newest first (an undated row counts as newest): a pool reads each such group in this
-- order, best first by its bound, and stops once no unread row can beat what it holds.
-- (An untagged row's tag factor is 1: its group's bound is that much tighter.)
DROP INDEX IF EXISTS poolsplit_v1.entry_contextual;
CREATE INDEX IF NOT EXISTS entry_walk ON poolsplit_v1.entry
    (prefix, etype, base, (pg_catalog.cardinality(tags) > 0),
     (-coalesce(created_us, 9223372036854775807)), key)
    WHERE regular AND active AND NOT always;
-- The rows a read takes whole (corrections, values the functions do not read exactly)
-- and the rows that carry a user: a few of a namespace, found without reading the rest.
CREATE INDEX IF NOT EXISTS entry_whole ON poolsplit_v1.entry (prefix)
    WHERE NOT regular OR always;
CREATE INDEX IF NOT EXISTS entry_users ON poolsplit_v1.entry (prefix)
    WHERE carries_user IS NOT FALSE;

CREATE OR REPLACE FUNCTION poolsplit_v1.keep_entry() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD.prefix, OLD.key) IS DISTINCT FROM
                                                 (NEW.prefix, NEW.key)) THEN
        DELETE FROM poolsplit_v1.entry WHERE prefix = OLD.prefix AND key = OLD.key;
        IF TG_OP = 'DELETE' THEN
            RETURN NULL;
        END IF;
    END IF;
    INSERT INTO poolsplit_v1.entry AS e
    SELECT NEW.prefix, NEW.key, NEW.updated_at, NEW.created_at, r.*,
           poolsplit_v1.carries_user(NEW.value)
    FROM poolsplit_v1.readings(NEW.value, NEW.created_at) AS r
    ON CONFLICT (prefix, key) DO UPDATE SET
        updated_at = EXCLUDED.updated_at, created_at = EXCLUDED.created_at,
        regular = EXCLUDED.regular,
        active = EXCLUDED.active, always = EXCLUDED.always, etype = EXCLUDED.etype,
        cost = EXCLUDED.cost, base = EXCLUDED.base, created_us = EXCLUDED.created_us,
        created_text = EXCLUDED.created_text, words = EXCLUDED.words, tags = EXCLUDED.tags,
        project = EXCLUDED.project, carries_user = EXCLUDED.carries_user;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION poolsplit_v1.clear_entries() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE poolsplit_v1.entry;
    RETURN NULL;
END
$$;

-- Whether a value carries a user: its user_id is there and not null (a tenant's row).
CREATE OR REPLACE FUNCTION poolsplit_v1.carries_user(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(value -> 'user_id', 'null'::jsonb) <> 'null'::jsonb;

-- The readings of one row (only a regular row's are kept: any other is read in Python).
-- regular() is read once (k): the other readings only when it holds.
CREATE OR REPLACE FUNCTION poolsplit_v1.readings(value jsonb, created_at timestamptz)
RETURNS TABLE (regular boolean, active boolean, always boolean, etype text, cost bigint,
               base float8, created_us bigint, created_text text, words text[],
               tags text[], project text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT k.ok,
           CASE WHEN k.ok THEN poolsplit_v1.active(value) END,
           CASE WHEN k.ok THEN poolsplit_v1.always(value) END,
           CASE WHEN k.ok THEN poolsplit_v1.entry_type(value) END,
           CASE WHEN k.ok THEN poolsplit_v1.cost(value) END,
           CASE WHEN k.ok THEN poolsplit_v1.base(value) END,
           CASE WHEN k.ok THEN poolsplit_v1.created_us(value, created_at) END,
           CASE WHEN k.ok AND pg_catalog.jsonb_typeof(value -> 'created') = 'string'
                THEN value ->> 'created' END,
           CASE WHEN k.ok THEN poolsplit_v1.words(value) END,
           CASE WHEN NOT k.ok THEN NULL::text[]
                WHEN pg_catalog.jsonb_typeof(value -> 'tags') = 'array'
                THEN ARRAY(SELECT DISTINCT t FROM pg_catalog.jsonb_array_elements_text(value -> 'tags') AS t)
                ELSE '{}'::text[] END,
           CASE WHEN k.ok AND pg_catalog.jsonb_typeof(value -> 'project') = 'string'
                THEN value ->> 'project' END
    FROM (SELECT poolsplit_v1.regular(value) AS ok OFFSET 0) AS k;
END;

CREATE OR REPLACE TRIGGER poolsplit_v1_entry
    AFTER INSERT OR DELETE OR UPDATE OF prefix, key, value, created_at, updated_at ON @STORE@
    FOR EACH ROW EXECUTE FUNCTION poolsplit_v1.keep_entry();
CREATE OR REPLACE TRIGGER poolsplit_v1_entries_cleared
    AFTER TRUNCATE ON @STORE@
    FOR EACH STATEMENT EXECUTE FUNCTION poolsplit_v1.clear_entries();
