import { type SqlBool, sql } from 'kysely';
import { ftsPhrase, trigramFoldingHazards } from '../../db/full-text.js';
import type { Column } from './scim.filter.js';

/**
 * Substring filters (`co`, `sw`, `ew`) answered from trigram indexes (migrations/0012_scim_search.ts): SQLite's FTS5
 * table `users_search`, PostgreSQL's pg_trgm GIN indexes. An index only narrows the rows to candidates; the
 * filter compiler still compares each candidate exactly, so a filter selects the same users with or without it, and
 * a needle the index cannot be trusted with is simply not given to it (the comparison then scans, as it always did).
 */

/** Trigram indexes find nothing shorter than a trigram. */
const MIN_NEEDLE = 3;

/** A lone surrogate reaches SQLite as U+FFFD: leave such needles to the exact comparison. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The FTS5 phrase for a needle, or undefined when the index cannot be trusted with it. `folded`: the indexed text
 * is compared as it is (a `*_key` column, lower-cased by the application; or a case-exact attribute), so FTS5's
 * folding, applied alike to the text and the needle, cannot lose a match.
 */
export function ftsNeedle(needle: string, folded: boolean): string | undefined {
  if (LONE_SURROGATE.test(needle)) return undefined;
  const chars = [...needle];
  if (!folded) {
    const { inside, atEnd } = trigramFoldingHazards() ?? {};
    if (!inside || !atEnd || chars.some((c) => inside.has(c))) return undefined;
    // A shorter needle finds a superset: drop trailing characters that may be the start of a longer lower-casing.
    while (chars.length > 0 && atEnd.has(chars.at(-1)!)) chars.pop();
  }
  return chars.length < MIN_NEEDLE ? undefined : ftsPhrase(chars.join(''));
}

/** A LIKE pattern (PostgreSQL's default escape character, backslash) for the needle as `op` compares it. */
export function likePattern(op: 'co' | 'sw' | 'ew', needle: string): string {
  const escaped = needle.replace(/[\\%_]/g, (c) => `\\${c}`);
  return op === 'sw' ? `${escaped}%` : op === 'ew' ? `%${escaped}` : `%${escaped}%`;
}

/**
 * Substring search on a column of `users` or `scim_users` (aliased `u`, `su` in the listing query), through its
 * column in `users_search` or `users_search_scim` on SQLite, and its pg_trgm index on PostgreSQL (whose indexed
 * expression is the column as the filter compares it: `lower(col)`, or the column itself when `folded`).
 * `folded`: the column is compared as stored (a `*_key` column, or case-exact). `sorted`: its B-tree answers `sw`
 * (a range) already.
 */
export function userSearch(
  table: 'users_search' | 'users_search_scim',
  column: string,
  { folded, sorted }: { folded: boolean; sorted: boolean },
): Column['search'] {
  const fts = sql.table(table);
  return (op, needle, dialect, expr) => {
    if (op === 'sw' && sorted) return undefined;
    if (dialect === 'postgres') {
      return [...needle].length < MIN_NEEDLE ? undefined : sql<SqlBool>`${expr} LIKE ${likePattern(op, needle)}`;
    }
    const match = ftsNeedle(needle, folded);
    if (match === undefined) return undefined;
    return sql<SqlBool>`u.id IN (SELECT r.user_id FROM users_search_rows r WHERE r.id IN (
      SELECT rowid FROM ${fts} WHERE ${fts} MATCH ${`{${column}} : ${match}`}))`;
  };
}
