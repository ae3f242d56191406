/** One run of a diff: text both sides share, or text only the old or only the new side has. */
export interface DiffPart {
  kind: 'same' | 'removed' | 'added';
  text: string;
}

/** Beyond this many token pairs the diff gives up on detail and shows the whole old and new text. */
const MAX_CELLS = 250_000;

/** Words and the whitespace between them, so that joining the tokens gives the text back. */
function tokenize(text: string, by: 'words' | 'lines'): string[] {
  if (text === '') return [];
  return by === 'lines' ? text.split(/(?<=\n)/) : text.split(/(\s+)/).filter((t) => t !== '');
}

function push(parts: DiffPart[], kind: DiffPart['kind'], text: string): void {
  const last = parts[parts.length - 1];
  if (last?.kind === kind) last.text += text;
  else parts.push({ kind, text });
}

/**
 * The shortest edit from `before` to `after`, word by word (a description) or line by line (a JSON schema), by the
 * longest common subsequence. Adjacent tokens of the same kind are merged into one part.
 */
export function diffText(before: string, after: string, by: 'words' | 'lines' = 'words'): DiffPart[] {
  const a = tokenize(before, by);
  const b = tokenize(after, by);
  if (a.length * b.length > MAX_CELLS) {
    const parts: DiffPart[] = [];
    if (before) parts.push({ kind: 'removed', text: before });
    if (after) parts.push({ kind: 'added', text: after });
    return parts;
  }
  // lcs[i][j]: the length of the longest common subsequence of a[i..] and b[j..].
  const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const parts: DiffPart[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      push(parts, 'same', a[i]!);
      i++;
      j++;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) {
      push(parts, 'removed', a[i++]!);
    } else {
      push(parts, 'added', b[j++]!);
    }
  }
  while (i < a.length) push(parts, 'removed', a[i++]!);
  while (j < b.length) push(parts, 'added', b[j++]!);
  return parts;
}
