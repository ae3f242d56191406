import { describe, expect, it } from 'vitest';
import { queryWords, searchKey, searchWords } from '../../src/db/full-text.js';

/*
 * Plain ASCII text takes a shorter way to its words than the rest; both must find the same words. A non-ASCII word
 * after a space sends the same text the long way, where it is one more word at the end.
 */

/** Printable ASCII and whitespace, at random, rich in word boundaries, digits and scientific-looking numbers. */
function randomAscii(length: number, seed: number): string {
  const pieces = ['a', 'Z', 'e', 'E', '1', '0', '5', ' ', '-', '_', '.', "'", '\t', '\n', '1e5', 'x', '~'];
  let state = seed;
  let text = '';
  for (let i = 0; i < length; i++) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    text += pieces[state % pieces.length];
  }
  return text;
}

describe('the words of a text', () => {
  it('are the same for plain ASCII whichever way they are found', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const text = randomAscii(5 + (seed % 60), seed);
      expect(searchWords(text), JSON.stringify(text)).toEqual(searchWords(`${text} é`).slice(0, -1));
    }
  });

  it('of plain ASCII: lower-cased letters and digits, numbers like 1e5 split from what follows', () => {
    expect(searchWords("Hello, World! state-of-the-art 1e5abc X2 _under_score don't\ttab\nnew")).toEqual([
      'hello',
      'world',
      'state',
      'of',
      'the',
      'art',
      '1e5',
      'abc',
      'x2',
      'under',
      'score',
      'don',
      't',
      'tab',
      'new',
    ]);
    expect(queryWords('Wombat wombat DIGS', 8)).toEqual(['wombat', 'digs']);
    expect(searchKey('A  wombat,   digs.')).toBe('a wombat digs');
  });
});
