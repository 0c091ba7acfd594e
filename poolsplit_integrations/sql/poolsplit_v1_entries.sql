-- poolsplit_v1_entries.sql -- each row's readings kept beside LangGraph's store table.
--
-- Needs poolsplit_v1.sql. @STORE@ is the store table, schema-qualified, filled in by
-- poolsplit_integrations._pgengine.setup_entries() (this file runs with
-- search_path = pg_catalog, like poolsplit_v1.sql).
--
-- poolsplit_v1.entry holds, for each row of the store table, what the core reads of
-- the entry the row becomes (poolsplit_v1.sql's functions), computed once, when the
-- row is written: triggers on the store table keep it in the writing transaction, so
-- every snapshot sees a row and its readings together. A read joins the two on
-- (prefix, key) and uses a reading only when its updated_at is the row's: a row with
-- no reading, or an older one (a write racing the first fill below), is read from
-- `value` and scored in Python instead. So these readings make reads fast; they never
-- decide an answer on their own.
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
    PRIMARY KEY (prefix, key)
);

-- The contextual rows of a namespace by type: what a pool's candidates are read from.
CREATE INDEX IF NOT EXISTS entry_contextual ON poolsplit_v1.entry (prefix, etype)
    WHERE regular AND active AND NOT always;

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
    SELECT NEW.prefix, NEW.key, NEW.updated_at, NEW.created_at, r.*
    FROM poolsplit_v1.readings(NEW.value, NEW.created_at) AS r
    ON CONFLICT (prefix, key) DO UPDATE SET
        updated_at = EXCLUDED.updated_at, created_at = EXCLUDED.created_at,
        regular = EXCLUDED.regular,
        active = EXCLUDED.active, always = EXCLUDED.always, etype = EXCLUDED.etype,
        cost = EXCLUDED.cost, base = EXCLUDED.base, created_us = EXCLUDED.created_us,
        created_text = EXCLUDED.created_text, words = EXCLUDED.words, tags = EXCLUDED.tags,
        project = EXCLUDED.project;
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

-- The readings of one row (only a regular row's are kept: any other is read in Python).
CREATE OR REPLACE FUNCTION poolsplit_v1.readings(value jsonb, created_at timestamptz)
RETURNS TABLE (regular boolean, active boolean, always boolean, etype text, cost bigint,
               base float8, created_us bigint, created_text text, words text[],
               tags text[], project text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT true, poolsplit_v1.active(value), poolsplit_v1.always(value),
           poolsplit_v1.entry_type(value), poolsplit_v1.cost(value), poolsplit_v1.base(value),
           poolsplit_v1.created_us(value, created_at),
           CASE WHEN pg_catalog.jsonb_typeof(value -> 'created') = 'string'
                THEN value ->> 'created' END,
           poolsplit_v1.words(value),
           CASE WHEN pg_catalog.jsonb_typeof(value -> 'tags') = 'array'
                THEN ARRAY(SELECT DISTINCT t FROM pg_catalog.jsonb_array_elements_text(value -> 'tags') AS t)
                ELSE '{}'::text[] END,
           CASE WHEN pg_catalog.jsonb_typeof(value -> 'project') = 'string'
                THEN value ->> 'project' END
    WHERE poolsplit_v1.regular(value)
    UNION ALL
    SELECT false, NULL::boolean, NULL::boolean, NULL::text, NULL::bigint, NULL::float8,
           NULL::bigint, NULL::text, NULL::text[], NULL::text[], NULL::text
    WHERE NOT poolsplit_v1.regular(value);
END;

CREATE OR REPLACE TRIGGER poolsplit_v1_entry
    AFTER INSERT OR DELETE OR UPDATE OF prefix, key, value, created_at, updated_at ON @STORE@
    FOR EACH ROW EXECUTE FUNCTION poolsplit_v1.keep_entry();
CREATE OR REPLACE TRIGGER poolsplit_v1_entries_cleared
    AFTER TRUNCATE ON @STORE@
    FOR EACH STATEMENT EXECUTE FUNCTION poolsplit_v1.clear_entries();
