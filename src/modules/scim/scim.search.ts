import SQLite from 'better-sqlite3';
import { type SqlBool, sql } from 'kysely';
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
 * Where FTS5's case folding and the application's (String.prototype.toLowerCase, which filters compare with)
 * disagree. FTS5 folds one code point to one code point from its own Unicode tables; toLowerCase folds İ to two
 * code points, Σ by context, and knows newer scripts. A needle may go to the index only when, wherever it occurs in
 * a lower-cased value, FTS5 folds the original text there as it folds the needle:
 * - `inside`: characters that some other character lower-cases to while FTS5 folds the two apart;
 * - `atEnd`: first characters of a longer lower-casing (the `i` of İ → i̇), unsafe as the needle's last character
 *   only (anywhere else the rest of the lower-casing follows, and that is in `inside`).
 */
interface FoldingHazards {
  inside: ReadonlySet<string>;
  atEnd: ReadonlySet<string>;
}

/**
 * Learned once per process, when a needle first needs it: it depends on the linked SQLite and the JavaScript
 * engine, not on the database. null: FTS5's folding cannot be learned (no trigram tokenizer), so never trusted.
 */
let hazards: FoldingHazards | null | undefined;

/**
 * Characters whose lower-casing changes them, in context (Σ ending a word lower-cases to ς). Every character with a
 * case mapping is in Unicode's planes 0 and 1 (the others hold ideographs, tags and private use).
 */
function foldingCases(): { doc: string; lowered: string }[] {
  const cases: { doc: string; lowered: string }[] = [];
  for (let cp = 0; cp <= 0x1ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    if (c.toLowerCase() === c) continue;
    const inWord = `a${c}b`.toLowerCase().slice(1, -1);
    cases.push({ doc: `a${c}b`, lowered: inWord });
    const atEnd = `a${c}.`.toLowerCase().slice(1, -1);
    if (atEnd !== inWord) cases.push({ doc: `a${c}.`, lowered: atEnd });
  }
  return cases;
}

/**
 * Finds the folding hazards by asking FTS5 itself, in a private in-memory database: each character that
 * lower-casing changes, indexed in context, must be found by its lower-casing (about 30 ms, once).
 */
function learnFolding(): FoldingHazards | null {
  const database = new SQLite(':memory:');
  try {
    database.exec(`create virtual table probe using fts5(x, tokenize = 'trigram')`);
    const inside = new Set<string>();
    const atEnd = new Set<string>();
    const cases = foldingCases();
    const insert = database.prepare('insert into probe (rowid, x) values (?, ?)');
    database.transaction(() => cases.forEach((c, i) => insert.run(i + 1, c.doc)))();
    const find = database.prepare('select rowid from probe where probe match ?').pluck();
    cases.forEach(({ doc, lowered }, i) => {
      const chars = [...lowered];
      if (chars.length > 1) {
        // Never given to the index: a needle holding the rest of this lower-casing is refused, and one ending
        // on its first character loses that character.
        atEnd.add(chars[0]!);
        chars.slice(1).forEach((c) => inside.add(c));
      } else if (!(find.all(phrase(`${doc[0]!}${lowered}${doc.at(-1)!}`)) as number[]).includes(i + 1)) {
        inside.add(lowered);
      }
    });
    return { inside, atEnd };
  } catch {
    return null;
  } finally {
    database.close();
  }
}

/** An FTS5 phrase: the needle quoted, so that nothing in it is query syntax. */
function phrase(needle: string): string {
  return `"${needle.replaceAll('"', '""')}"`;
}

/**
 * The FTS5 phrase for a needle, or undefined when the index cannot be trusted with it. `folded`: the indexed text
 * is compared as it is (a `*_key` column, lower-cased by the application; or a case-exact attribute), so FTS5's
 * folding, applied alike to the text and the needle, cannot lose a match.
 */
export function ftsNeedle(needle: string, folded: boolean): string | undefined {
  if (LONE_SURROGATE.test(needle)) return undefined;
  const chars = [...needle];
  if (!folded) {
    if (hazards === undefined) hazards = learnFolding();
    const { inside, atEnd } = hazards ?? {};
    if (!inside || !atEnd || chars.some((c) => inside.has(c))) return undefined;
    // A shorter needle finds a superset: drop trailing characters that may be the start of a longer lower-casing.
    while (chars.length > 0 && atEnd.has(chars.at(-1)!)) chars.pop();
  }
  return chars.length < MIN_NEEDLE ? undefined : phrase(chars.join(''));
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
