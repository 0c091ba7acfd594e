-- poolsplit_v1.sql -- the per-row readings of the core, inside PostgreSQL, version 1.
--
-- What the Python core computes for the entry a row of LangGraph's
--   store(prefix text, key text, value jsonb, created_at timestamptz, ...)
-- becomes (poolsplit_integrations._entries.item_to_entry, then the default scorer):
-- type, activity, scope, cost, base priority, created (microseconds and sort text),
-- W(content), the default score. Every reading is exact -- the same bits as Python --
-- for a row that poolsplit_v1.regular(value) accepts; for any other row the
-- functions return something (never an error) that need not be Python's: read and
-- score those rows in Python.
--
-- Installed by poolsplit_integrations._pgsql.setup() in one transaction, under an
-- advisory lock, once: its version is recorded in poolsplit_v1.installed.
--
-- Rules this file keeps:
-- * Versioned: a function here never changes in place. An expression index or a
--   stored generated column over a function keeps the values computed by the
--   definition it was built with, silently, after CREATE OR REPLACE; a changed
--   reading goes in a new schema (poolsplit_v2) and its indexes are built anew.
-- * IMMUTABLE PARALLEL SAFE, independent of session settings (TimeZone, DateStyle,
--   search_path, the database's collation), except created_text(value, created_at),
--   STABLE, which reads TimeZone on purpose.
-- * SQL-standard bodies (RETURN / BEGIN ATOMIC): parsed once, here, with
--   search_path = pg_catalog (so an unqualified reference fails at install time,
--   not inside an index build: PostgreSQL 17+ runs CREATE INDEX, REINDEX and
--   ANALYZE with search_path = pg_catalog), and the planner still inlines the
--   single-expression ones (a SET search_path clause would stop that). Every call
--   between them is schema-qualified anyway. No E'' string here holds a backslash
--   that standard_conforming_strings could read otherwise.
-- * Float8 operations are the core's, in the core's order.
-- * Needs PostgreSQL 14+ and a UTF8 database (setup() checks both).

SET LOCAL search_path = pg_catalog;
SET LOCAL check_function_bodies = on;

CREATE SCHEMA IF NOT EXISTS poolsplit_v1;
GRANT USAGE ON SCHEMA poolsplit_v1 TO PUBLIC;

CREATE TABLE IF NOT EXISTS poolsplit_v1.installed (
    version integer PRIMARY KEY,
    installed_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
GRANT SELECT ON poolsplit_v1.installed TO PUBLIC;

------------------------------------------------------------------------------
-- Python's str.strip() / re's \s: the characters str.isspace() is true for.
------------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION poolsplit_v1.py_space() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN E'\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';

-- str.strip()
CREATE OR REPLACE FUNCTION poolsplit_v1.py_strip(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.btrim(t, poolsplit_v1.py_space());

------------------------------------------------------------------------------
-- W(text): the [a-z0-9] runs of text.lower() longer than two characters, less the
-- 57 stopwords. Of every character, str.lower() sends only A-Z, U+212A KELVIN SIGN
-- (-> 'k') and U+0130 (-> 'i' + U+0307, a combining mark: a run break) into ASCII;
-- every other non-ASCII character is a separator whatever it lowers to. lower()
-- under COLLATE "C" maps exactly A-Z, whatever the database's locale.
------------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION poolsplit_v1.word_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.replace(pg_catalog.replace(pg_catalog.lower(t COLLATE "C"),
                                             pg_catalog.chr(8490), 'k'),
                          pg_catalog.chr(304), 'i ');

CREATE OR REPLACE FUNCTION poolsplit_v1.stopwords() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '{the,and,for,are,but,not,you,all,can,her,was,one,our,out,day,has,had,his,how,man,new,now,old,see,two,way,who,did,its,let,put,say,she,too,use,that,this,with,from,they,them,then,than,have,will,your,what,when,were,been,into,some,more,very,just,over,only}'::text[];

-- W(t), sorted (code points) and distinct; '{}' for NULL.
CREATE OR REPLACE FUNCTION poolsplit_v1.text_words(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT coalesce(pg_catalog.array_agg(DISTINCT w ORDER BY w), '{}'::text[])
  FROM (SELECT r COLLATE "C" AS w
        FROM pg_catalog.regexp_split_to_table(poolsplit_v1.word_text(t), '[^a-z0-9]+') AS r
        WHERE pg_catalog.length(r) > 2 AND r <> ALL (poolsplit_v1.stopwords())) AS runs;
END;

-- |W(t) & message_words| (message_words: W(message), distinct); 0 without message words.
CREATE OR REPLACE FUNCTION poolsplit_v1.shared_words(t text, message_words text[]) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN coalesce(pg_catalog.cardinality(message_words), 0) = 0 THEN 0
            ELSE pg_catalog.cardinality(ARRAY(
                   SELECT m COLLATE "C" FROM pg_catalog.unnest(message_words) AS m
                   INTERSECT
                   SELECT w COLLATE "C"
                   FROM pg_catalog.unnest(poolsplit_v1.text_words(t)) AS w))
       END;

------------------------------------------------------------------------------
-- created -> epoch microseconds: poolsplit_core.poolsplit._time_us of a str.
-- str.strip(), then _ISO fully matched:
--   YYYY-MM-DD [ [Tt ]HH [:MM [:SS [(.|,)digits]]] ] \s* [ Z | z | (+|-)HH[[:]MM] ]
-- a real calendar date (year >= 1), 00:00:00-23:59:59, offset HH*60+MM < 24 h;
-- the fraction's first six digits; naive = UTC. NULL when unparseable. (The core
-- tries datetime.fromisoformat first on isoformat()'s own shape, falling back to
-- _ISO when it refuses; on CPython 3.11 it reads every such string to this same
-- instant or refuses it as this does. A Python whose fromisoformat reads more, such
-- as T24:00:00, only makes regular() refuse a row the core reads.)
------------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION poolsplit_v1.civil_us(
    y integer, mo integer, d integer, hh integer, mi integer, ss integer,
    frac text, sign text, off_h integer, off_m integer) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN y >= 1 AND mo BETWEEN 1 AND 12 AND d >= 1
   AND d <= CASE WHEN mo = 2 THEN CASE WHEN (y % 4 = 0 AND y % 100 <> 0) OR y % 400 = 0
                                       THEN 29 ELSE 28 END
                 WHEN mo IN (4, 6, 9, 11) THEN 30 ELSE 31 END
   AND hh <= 23 AND mi <= 59 AND ss <= 59
   AND (sign IS NULL OR off_h * 60 + off_m < 1440)
  THEN ((( ((y - (mo <= 2)::integer) / 400)::bigint * 146097
          + ((y - (mo <= 2)::integer) % 400) * 365
          + ((y - (mo <= 2)::integer) % 400) / 4
          - ((y - (mo <= 2)::integer) % 400) / 100
          + (153 * (mo + CASE WHEN mo > 2 THEN -3 ELSE 9 END) + 2) / 5 + d - 1
          - 719468) * 86400
         + hh * 3600 + mi * 60 + ss
         - CASE WHEN sign = '-' THEN -1 WHEN sign = '+' THEN 1 ELSE 0 END
           * (off_h * 60 + off_m) * 60) * 1000000
        + pg_catalog.rpad(pg_catalog."left"(coalesce(frac, '0'), 6), 6, '0')::bigint)
END;

-- The general parser, for a stripped text: _ISO's captures, taken once per call (a
-- function with a FROM is never inlined, and OFFSET 0 keeps the match from being
-- pulled up and evaluated once per capture).
CREATE OR REPLACE FUNCTION poolsplit_v1.time_us_general(s text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT CASE WHEN match.m IS NOT NULL THEN
    poolsplit_v1.civil_us(match.m[1]::integer, match.m[2]::integer, match.m[3]::integer,
                          coalesce(match.m[4]::integer, 0), coalesce(match.m[5]::integer, 0),
                          coalesce(match.m[6]::integer, 0), match.m[7], match.m[9],
                          coalesce(match.m[10]::integer, 0), coalesce(match.m[11]::integer, 0))
    END
  FROM (SELECT pg_catalog.regexp_match(s COLLATE "C",
          '^([0-9]{4})-([0-9]{2})-([0-9]{2})'
          || '(?:[Tt ]([0-9]{2})(?::([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?)?)?'
          || '[' || poolsplit_v1.py_space() || ']*(?:([Zz])|([+-])([0-9]{2})(?::?([0-9]{2}))?)?$')
          AS m
        OFFSET 0) AS match;
END;

-- The fast path, for a stripped text in datetime.isoformat()'s own shape with every
-- field in range (checked by the caller's regular expression: year 0001-9999, month
-- 01-12, a day every such month has -- so not Feb 29 --, 00:00:00-23:59:59, an
-- offset under 24 h):
--   YYYY-MM-DDTHH:MM:SS[.ffffff][Z|(+|-)HH:MM]
-- Fields by position; one reference to each of y, m, d, so the planner inlines it.
CREATE OR REPLACE FUNCTION poolsplit_v1.time_us_written(s text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (((pg_catalog.make_date(pg_catalog.substr(s, 1, 4)::integer,
                               pg_catalog.substr(s, 6, 2)::integer,
                               pg_catalog.substr(s, 9, 2)::integer) - DATE '1970-01-01')::bigint * 86400
         + pg_catalog.substr(s, 12, 2)::integer * 3600
         + pg_catalog.substr(s, 15, 2)::integer * 60
         + pg_catalog.substr(s, 18, 2)::integer
         - CASE WHEN pg_catalog.length(s) IN (25, 32)
                THEN CASE WHEN pg_catalog.substr(s, pg_catalog.length(s) - 5, 1) = '-' THEN -1 ELSE 1 END
                     * (pg_catalog.substr(s, pg_catalog.length(s) - 4, 2)::integer * 3600
                        + pg_catalog.substr(s, pg_catalog.length(s) - 1, 2)::integer * 60)
                ELSE 0 END) * 1000000
       + CASE WHEN pg_catalog.substr(s, 20, 1) = '.' THEN pg_catalog.substr(s, 21, 6)::bigint ELSE 0 END);

CREATE OR REPLACE FUNCTION poolsplit_v1.time_us(t text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN poolsplit_v1.py_strip(t) COLLATE "C"
       ~ ('^(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-'
          || '(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)'
          || 'T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:[.][0-9]{6})?'
          || '(?:Z|[+-](?:[01][0-9]|2[0-2]):[0-9]{2}|[+-]23:[0-5][0-9])?$')
  THEN poolsplit_v1.time_us_written(poolsplit_v1.py_strip(t))
  ELSE poolsplit_v1.time_us_general(poolsplit_v1.py_strip(t))
END;

-- A timestamptz as Python's datetime.isoformat() writes it once psycopg has read it
-- in the zone `zone` (its connection's TimeZone: conn.info.timezone): microseconds
-- only when not 0, the UTC offset with seconds only when not 0.
CREATE OR REPLACE FUNCTION poolsplit_v1.iso_local_text(l timestamp, off integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.lpad(pg_catalog.date_part('year', l)::integer::text, 4, '0')
  || '-' || pg_catalog.lpad(pg_catalog.date_part('month', l)::integer::text, 2, '0')
  || '-' || pg_catalog.lpad(pg_catalog.date_part('day', l)::integer::text, 2, '0')
  || 'T' || pg_catalog.lpad(pg_catalog.date_part('hour', l)::integer::text, 2, '0')
  || ':' || pg_catalog.lpad(pg_catalog.date_part('minute', l)::integer::text, 2, '0')
  || ':' || pg_catalog.lpad((pg_catalog."extract"('microseconds', l)::bigint / 1000000)::text, 2, '0')
  || CASE WHEN pg_catalog."extract"('microseconds', l)::bigint % 1000000 <> 0
          THEN '.' || pg_catalog.lpad((pg_catalog."extract"('microseconds', l)::bigint % 1000000)::text, 6, '0')
          ELSE '' END
  || CASE WHEN off < 0 THEN '-' ELSE '+' END
  || pg_catalog.lpad((pg_catalog.abs(off) / 3600)::text, 2, '0')
  || ':' || pg_catalog.lpad((pg_catalog.abs(off) % 3600 / 60)::text, 2, '0')
  || CASE WHEN pg_catalog.abs(off) % 60 <> 0 THEN ':' || pg_catalog.lpad((pg_catalog.abs(off) % 60)::text, 2, '0')
          ELSE '' END;

CREATE OR REPLACE FUNCTION poolsplit_v1.iso_text(ts timestamptz, zone text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN pg_catalog.isfinite(ts) THEN poolsplit_v1.iso_local_text(
  pg_catalog.timezone(zone, ts),
  (pg_catalog."extract"('epoch', pg_catalog.timezone(zone, ts))
   - pg_catalog."extract"('epoch', pg_catalog.timezone('UTC', ts)))::integer) END;

------------------------------------------------------------------------------
-- Field readers (item_to_entry, then the core's entry.get(...)).
------------------------------------------------------------------------------

-- The entry's content: value->>'content' when a JSON string (a regular row's), else NULL.
CREATE OR REPLACE FUNCTION poolsplit_v1.content(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN pg_catalog.jsonb_typeof(value -> 'content') = 'string' THEN value ->> 'content' END;

-- entry.get("type", "note") after item_to_entry's kind rule (a missing or null type
-- takes a non-empty str kind); NULL when that is not a str.
CREATE OR REPLACE FUNCTION poolsplit_v1.entry_type(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN value -> 'type' IS NULL OR value -> 'type' = 'null'::jsonb THEN
    CASE WHEN pg_catalog.jsonb_typeof(value -> 'kind') = 'string' AND value ->> 'kind' <> ''
         THEN value ->> 'kind'
         WHEN value -> 'type' IS NULL THEN 'note' END
  WHEN pg_catalog.jsonb_typeof(value -> 'type') = 'string' THEN value ->> 'type'
END;

-- default_is_active: status "active" (or missing) and no truthy superseded_by.
CREATE OR REPLACE FUNCTION poolsplit_v1.active(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(value -> 'status' IS NULL OR value -> 'status' = '"active"'::jsonb, false)
   AND coalesce(value -> 'superseded_by' IS NULL
                OR value -> 'superseded_by' IN ('null'::jsonb, 'false'::jsonb, '""'::jsonb,
                                                '0'::jsonb, '[]'::jsonb, '{}'::jsonb), false);

-- entry.get("scope") == "always"
CREATE OR REPLACE FUNCTION poolsplit_v1.always(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(value -> 'scope' = '"always"'::jsonb, false);

-- The default token counter's cost: token_count when a positive JSON integer (below
-- 10**18), else max(1, len(content) // 4) (code points).
CREATE OR REPLACE FUNCTION poolsplit_v1.cost(value jsonb) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN pg_catalog.jsonb_typeof(value -> 'token_count') = 'number'
                 AND (value ->> 'token_count') COLLATE "C" ~ '^[1-9][0-9]{0,17}$'
            THEN (value ->> 'token_count')::bigint
            ELSE pg_catalog.int8larger(1, coalesce(pg_catalog.char_length(poolsplit_v1.content(value)), 0) / 4)
       END;

-- float(entry.get("base_priority", 5)) for a JSON number of magnitude 0 or in
-- [1e-300, 1e300) (the decimal jsonb keeps, correctly rounded, as Python's float()
-- of the same text); NULL for anything else.
CREATE OR REPLACE FUNCTION poolsplit_v1.base(value jsonb) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN value -> 'base_priority' IS NULL THEN 5.0::float8
  WHEN pg_catalog.jsonb_typeof(value -> 'base_priority') = 'number' THEN
    CASE WHEN pg_catalog.abs((value -> 'base_priority')::numeric) < 1e300
              AND ((value -> 'base_priority')::numeric = 0
                   OR pg_catalog.abs((value -> 'base_priority')::numeric) >= 1e-300)
         THEN (value ->> 'base_priority')::float8 END
END;

-- _time_us(entry["created"]): the value's created when present and not null (NULL
-- when not a str or unparseable), else the row's created_at (NULL: undated).
CREATE OR REPLACE FUNCTION poolsplit_v1.created_us(value jsonb, created_at timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN coalesce(pg_catalog.jsonb_typeof(value -> 'created'), 'null') <> 'null' THEN
    CASE WHEN pg_catalog.jsonb_typeof(value -> 'created') = 'string'
         THEN poolsplit_v1.time_us(value ->> 'created') END
  WHEN created_at IS NOT NULL AND pg_catalog.isfinite(created_at) THEN
    (pg_catalog."extract"('epoch', pg_catalog.timezone('UTC', created_at)) * 1000000)::bigint
END;

-- _sort_text(entry, "created"): the value's created str as written; else the row's
-- created_at as psycopg's datetime in `zone` writes itself (isoformat); '' when
-- there is neither. (NULL for a created that is not a str.)
CREATE OR REPLACE FUNCTION poolsplit_v1.created_text(value jsonb, created_at timestamptz, zone text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN coalesce(pg_catalog.jsonb_typeof(value -> 'created'), 'null') <> 'null' THEN
    CASE WHEN pg_catalog.jsonb_typeof(value -> 'created') = 'string' THEN value ->> 'created' END
  WHEN created_at IS NULL THEN ''
  ELSE poolsplit_v1.iso_text(created_at, zone)
END;

-- The same in the session's TimeZone (what psycopg reads a row's created_at in,
-- when Python's zoneinfo knows that zone's name).
CREATE OR REPLACE FUNCTION poolsplit_v1.created_text(value jsonb, created_at timestamptz)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN poolsplit_v1.created_text(value, created_at, pg_catalog.current_setting('TimeZone'));

-- W(content), sorted and distinct.
CREATE OR REPLACE FUNCTION poolsplit_v1.words(value jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN poolsplit_v1.text_words(poolsplit_v1.content(value));

------------------------------------------------------------------------------
-- regular(value): TRUE only when the row is an entry checks.entry_problems finds
-- nothing wrong with and every reading above is exactly the core's:
--   value a JSON object; content a JSON string; scope absent, null, "always" or
--   "contextual"; status absent or a non-empty string; created absent, null or a
--   string time_us parses; token_count absent, null or a JSON integer in
--   [1, 10**18); tags absent, null or an array of strings; superseded_by absent,
--   null or a string; base_priority absent or a JSON number of magnitude 0 or in
--   [1e-300, 1e300); type absent or a non-empty string, or null with kind a
--   non-empty string; user_id absent or a string with a non-whitespace character;
--   project absent, null or a string.
------------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION poolsplit_v1.regular(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(
      pg_catalog.jsonb_typeof(value) = 'object'
  AND pg_catalog.jsonb_typeof(value -> 'content') = 'string'
  AND (value -> 'scope' IS NULL
       OR value -> 'scope' IN ('null'::jsonb, '"always"'::jsonb, '"contextual"'::jsonb))
  AND (value -> 'status' IS NULL
       OR (pg_catalog.jsonb_typeof(value -> 'status') = 'string' AND value ->> 'status' <> ''))
  AND (coalesce(pg_catalog.jsonb_typeof(value -> 'created'), 'null') = 'null'
       OR (pg_catalog.jsonb_typeof(value -> 'created') = 'string'
           AND poolsplit_v1.time_us(value ->> 'created') IS NOT NULL))
  AND (coalesce(pg_catalog.jsonb_typeof(value -> 'token_count'), 'null') = 'null'
       OR (pg_catalog.jsonb_typeof(value -> 'token_count') = 'number'
           AND (value ->> 'token_count') COLLATE "C" ~ '^[1-9][0-9]{0,17}$'))
  AND (coalesce(pg_catalog.jsonb_typeof(value -> 'tags'), 'null') = 'null'
       OR (pg_catalog.jsonb_typeof(value -> 'tags') = 'array'
           AND NOT pg_catalog.jsonb_path_exists(value -> 'tags',
                                                'strict $[*] ? (@.type() != "string")')))
  AND (coalesce(pg_catalog.jsonb_typeof(value -> 'superseded_by'), 'null') IN ('null', 'string'))
  AND (value -> 'base_priority' IS NULL
       OR (pg_catalog.jsonb_typeof(value -> 'base_priority') = 'number'
           AND poolsplit_v1.base(value) IS NOT NULL))
  AND CASE WHEN value -> 'type' IS NULL THEN true
           WHEN value -> 'type' = 'null'::jsonb
           THEN pg_catalog.jsonb_typeof(value -> 'kind') = 'string' AND value ->> 'kind' <> ''
           ELSE pg_catalog.jsonb_typeof(value -> 'type') = 'string' AND value ->> 'type' <> '' END
  AND (value -> 'user_id' IS NULL
       OR (pg_catalog.jsonb_typeof(value -> 'user_id') = 'string'
           AND poolsplit_v1.py_strip(value ->> 'user_id') <> ''))
  AND (coalesce(pg_catalog.jsonb_typeof(value -> 'project'), 'null') IN ('null', 'string')),
  false);

------------------------------------------------------------------------------
-- The default score (no make_scorer options), factor by factor, in float8, in the
-- core's order:  base * recency * tags * project * message.
------------------------------------------------------------------------------

-- max(0.3, 1.0 - 0.7 * (max(0, age_us) / 1_000_000 / 86400.0) / 90); undated: age 0.
-- (age_us / 10**6 in Python is the correctly rounded quotient; so is float8 division
-- of an exactly converted age below 2**53 us, and any older age gives 0.3 either way.)
CREATE OR REPLACE FUNCTION poolsplit_v1.recency(created_us bigint, now_us bigint) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.float8larger(0.3::float8,
  1.0::float8 - (0.7::float8 * ((pg_catalog.int8larger(0, coalesce(now_us - created_us, 0))::float8
                                 / 1000000.0::float8) / 86400.0::float8)) / 90.0::float8);

-- 1 + 0.5 * |E & C| / |E| for entry tags E (a JSON array of strings, as a set) and
-- context tags C, both non-empty; else 1.0.
CREATE OR REPLACE FUNCTION poolsplit_v1.tag_factor(tags jsonb, context_tags text[]) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN coalesce(pg_catalog.cardinality(context_tags), 0) = 0
       OR pg_catalog.jsonb_typeof(tags) IS DISTINCT FROM 'array'
       OR pg_catalog.jsonb_array_length(tags) = 0
  THEN 1.0::float8
  ELSE (SELECT 1.0::float8 + (0.5::float8 * (pg_catalog.count(*) FILTER (WHERE e.t = ANY (context_tags)))::float8)
                             / pg_catalog.count(*)::float8
        FROM (SELECT DISTINCT x COLLATE "C" AS t
              FROM pg_catalog.jsonb_array_elements_text(tags) AS x) AS e)
END;

-- 1.0 without a project, 1.5 for the context's (context_project: the context's
-- project when a str, else NULL), else 0.5.
CREATE OR REPLACE FUNCTION poolsplit_v1.project_factor(project jsonb, context_project text) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
  WHEN project IS NULL OR project = 'null'::jsonb THEN 1.0::float8
  WHEN pg_catalog.jsonb_typeof(project) = 'string'
       AND (project #>> '{}') COLLATE "C" = context_project THEN 1.5::float8
  ELSE 0.5::float8
END;

-- _default_score of the row's entry.
--   now_us:          the query's now, integer microseconds since the epoch
--   message_words:   the core's _Query.words (W(message)), distinct, any order
--   message_factors: the core's _Query.message_factors (index k = k shared words,
--                    here element k + 1): [1.0] without message words
--   context_tags:    the core's _Query.tags
--   context_project: the context's project when it is a str, else NULL (a regular
--                    row's project is a str or none, so no other value can equal it)
CREATE OR REPLACE FUNCTION poolsplit_v1.score(
    value jsonb, created_at timestamptz, now_us bigint, message_words text[],
    message_factors float8[], context_tags text[], context_project text) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN poolsplit_v1.base(value)
     * poolsplit_v1.recency(poolsplit_v1.created_us(value, created_at), now_us)
     * poolsplit_v1.tag_factor(value -> 'tags', context_tags)
     * poolsplit_v1.project_factor(value -> 'project', context_project)
     * message_factors[1 + poolsplit_v1.shared_words(poolsplit_v1.content(value), message_words)];
