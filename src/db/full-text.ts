import SQLite from 'better-sqlite3';
import { type Kysely, PostgresAdapter } from 'kysely';

/**
 * How messages are cut into words for full-text search, the same on SQLite (FTS5) and PostgreSQL (tsvector).
 *
 * Neither store's tokenizer sees raw text: the application stores each message's words, lower-cased and separated by
 * single spaces, in `messages.content_key`, and both indexes read that column. PostgreSQL's parser would otherwise
 * keep e-mail addresses, URLs, file paths and hyphenated words as extra tokens and depends on the server's locale;
 * FTS5's unicode61 tokenizer folds a few characters that `toLowerCase` keeps. With only plain words left, both
 * produce exactly the words listed here.
 */

/**
 * A word: letters, decimal digits and letter-like numerals, then also combining marks. Other numbers (², ½) and marks
 * that start a word PostgreSQL drops, so they separate words here too.
 */
const WORD = /[\p{L}\p{Nd}\p{Nl}][\p{L}\p{Nd}\p{Nl}\p{M}]*/gu;

/** PostgreSQL reads `1e5` at the start of `1e5abc` as a number and the rest as another word. */
const SCIENTIFIC = /^([0-9]+e[0-9]+)([^0-9].*)$/su;

/** Longer words are left out: PostgreSQL ignores words over 2047 bytes, and nobody searches for one. */
export const MAX_WORD_LENGTH = 200;

/** The key is cut here (at a word): keeps a PostgreSQL tsvector well under its 1 MB limit. */
export const MAX_KEY_LENGTH = 100_000;

/** Case folding FTS5's unicode61 applies after lower-casing, so that PostgreSQL sees the same words. */
const FOLD: Record<string, string> = {
  µ: 'μ',
  ſ: 's',
  ς: 'σ',
  ϐ: 'β',
  ϑ: 'θ',
  ϕ: 'φ',
  ϖ: 'π',
  ϰ: 'κ',
  ϱ: 'ρ',
  ϵ: 'ε',
  ẛ: 'ṡ',
  '\u0345': 'ι',
};
const FOLDABLE = new RegExp(Object.keys(FOLD).join('|'), 'gu');

function splitScientific(word: string): string[] {
  const parts = SCIENTIFIC.exec(word);
  return parts ? [parts[1]!, ...(parts[2]!.match(WORD) ?? []).flatMap(splitScientific)] : [word];
}

/** Printable ASCII and whitespace, whose words need no normalisation, folding or Unicode classes. */
const PLAIN = /^[\t\n\r\x20-\x7e]*$/;
/** `WORD` within plain ASCII, once lower-cased: its letters are a-z, its digits 0-9, and it has no marks. */
const PLAIN_WORD = /[a-z0-9]+/g;

/** Every word of `text` as both stores index it, in order, repeats kept. */
function allWords(text: string): string[] {
  // Most text is plain ASCII, where NFC and the folds change nothing: the same words without them (a search's words
  // are taken on every call, a message's on every write).
  if (PLAIN.test(text)) return (text.toLowerCase().match(PLAIN_WORD) ?? []).flatMap(splitScientific);
  const folded = text
    .normalize('NFC')
    .toLowerCase()
    .replace(FOLDABLE, (c) => FOLD[c]!);
  return (folded.match(WORD) ?? []).flatMap(splitScientific);
}

/** The words of `text` as both stores index them, in order, repeats kept, long words left out. */
export function searchWords(text: string): string[] {
  return allWords(text).filter((word) => word.length <= MAX_WORD_LENGTH);
}

/** What `messages.content_key` holds: the message's words separated by single spaces, cut at a word. */
export function searchKey(content: string): string {
  const key = searchWords(content).join(' ');
  if (key.length <= MAX_KEY_LENGTH) return key;
  const cut = key.lastIndexOf(' ', MAX_KEY_LENGTH);
  return key.slice(0, cut > 0 ? cut : 0);
}

/**
 * The words a search looks for, or undefined when nothing can match (a word longer than any indexed one). At most
 * `max` distinct words; an empty list when the query has none.
 */
export function queryWords(query: string, max: number): string[] | undefined {
  const words = allWords(query);
  if (words.some((word) => word.length > MAX_WORD_LENGTH)) return undefined;
  return [...new Set(words)].slice(0, max);
}

/** Roles whose messages are searched (and indexed): what people wrote and what the agent answered. */
export const SEARCHED_ROLES = ['user', 'assistant'] as const;

/** Text as one FTS5 phrase: quoted, so that nothing in it (`"`, `*`, `NEAR`, `OR`, `-`, …) is read as query syntax. */
export function ftsPhrase(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

/** FTS5 needs a phrase per word so that nothing in it is read as query syntax. */
export function ftsMatchExpression(words: string[]): string {
  return words.map(ftsPhrase).join(' ');
}

/**
 * Where FTS5's case folding and the application's (String.prototype.toLowerCase, which filters compare with)
 * disagree. FTS5 folds one code point to one code point from its own Unicode tables; toLowerCase folds İ to two
 * code points, Σ by context, and knows newer scripts. A needle may go to the index only when, wherever it occurs in
 * a lower-cased value, FTS5 folds the original text there as it folds the needle:
 * - `inside`: characters that some other character lower-cases to while FTS5 folds the two apart;
 * - `atEnd`: first characters of a longer lower-casing (the `i` of İ → i̇), unsafe as the needle's last character
 *   only (anywhere else the rest of the lower-casing follows, and that is in `inside`).
 */
export interface FoldingHazards {
  inside: ReadonlySet<string>;
  atEnd: ReadonlySet<string>;
}

let hazards: FoldingHazards | null | undefined;

/**
 * The folding hazards of FTS5's trigram tokenizer, learned once per process when a search first needs them: they
 * depend on the linked SQLite and the JavaScript engine, not on the database. null: FTS5's folding cannot be learned
 * (no trigram tokenizer), so it is never trusted.
 */
export function trigramFoldingHazards(): FoldingHazards | null {
  if (hazards === undefined) hazards = learnFolding();
  return hazards;
}

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
      } else if (!(find.all(ftsPhrase(`${doc[0]!}${lowered}${doc.at(-1)!}`)) as number[]).includes(i + 1)) {
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

/** Whether `db` (or a transaction of it) talks to PostgreSQL; otherwise it is SQLite. */
export function isPostgres<DB>(db: Kysely<DB>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
