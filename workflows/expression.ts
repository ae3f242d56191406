/**
 * The expression language of router conditions (`edge.data.condition`) and of `{{ … }}` templates in tool arguments.
 *
 * It is parsed and interpreted here, never handed to `eval` or `Function`, so a workflow cannot run code in the
 * service. Its semantics are kept small and JSON-shaped on purpose: generated TypeScript and Python must reproduce
 * them exactly, so every rule below is one a few lines of either language can state.
 *
 *   or      := and (('||' | 'or') and)*
 *   and     := not (('&&' | 'and') not)*
 *   not     := ('!' | 'not') not | cmp
 *   cmp     := value (('==' | '!=' | '<' | '<=' | '>' | '>=' | 'contains') value)?
 *   value   := literal | path | '(' or ')'
 *   literal := 'string' | "string" | -?\d+(\.\d+)? | true | false | null
 *   path    := ident ('.' ident | '[' index ']' | '[' string ']')*      a leading `state` names the scope itself
 *
 * Expressions are evaluated over the run's scope (`scopeOf`): the node results in `vars`, plus `input`, `messages`
 * and `output`.
 */

export type Literal = string | number | boolean | null;

export type Expr =
  | { kind: 'literal'; value: Literal }
  | { kind: 'path'; segments: (string | number)[] }
  | { kind: 'not'; operand: Expr }
  | { kind: 'and' | 'or'; left: Expr; right: Expr }
  | { kind: 'compare'; op: CompareOp; left: Expr; right: Expr };

export type CompareOp = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'contains';

export type ParseResult = { ok: true; expr: Expr } | { ok: false; message: string; position: number };

/** Longest accepted source: conditions are short, and the bound keeps parsing cheap on hostile input. */
export const MAX_EXPRESSION_LENGTH = 1000;

/** Deepest accepted nesting of parentheses and negations, so evaluation never recurses without bound. */
export const MAX_EXPRESSION_DEPTH = 32;

const KEYWORDS = new Set(['and', 'or', 'not', 'contains', 'true', 'false', 'null']);

type Token =
  | { type: 'string'; value: string; position: number }
  | { type: 'number'; value: number; text: string; position: number }
  | { type: 'word'; value: string; position: number }
  | { type: 'punct'; value: string; position: number }
  | { type: 'end'; position: number };

class ParseError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const isIdentStart = (c: string | undefined): boolean => c !== undefined && /[A-Za-z_]/.test(c);
const isIdentPart = (c: string | undefined): boolean => c !== undefined && /[A-Za-z0-9_]/.test(c);

const ESCAPES: Record<string, string> = { '"': '"', "'": "'", '\\': '\\', n: '\n', t: '\t' };

/** Two-character operators first, so that `<=` is not read as `<` then `=`. */
const PUNCTUATION = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '!', '(', ')', '[', ']', '.'];

/** Hints for characters people type from other languages. */
const HINTS: Record<string, string> = {
  '=': "Unexpected '=': compare with '=='",
  '&': "Unexpected '&': use '&&' or 'and'",
  '|': "Unexpected '|': use '||' or 'or'",
};

function readString(source: string, start: number): { value: string; end: number } {
  const quote = source[start];
  let value = '';
  let i = start + 1;
  while (i < source.length) {
    const c = source[i];
    if (c === quote) return { value, end: i + 1 };
    if (c === '\\') {
      const escaped = source[i + 1];
      const replacement = escaped === undefined ? undefined : ESCAPES[escaped];
      if (replacement === undefined)
        throw new ParseError('Unknown escape in a string: use \\" \\\' \\\\ \\n or \\t', i);
      value += replacement;
      i += 2;
      continue;
    }
    value += c;
    i++;
  }
  throw new ParseError('Unterminated string', start);
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c === '"' || c === "'") {
      const { value, end } = readString(source, i);
      tokens.push({ type: 'string', value, position: i });
      i = end;
      continue;
    }
    if (isDigit(c) || (c === '-' && isDigit(source[i + 1]))) {
      const match = /^-?\d+(\.\d+)?/.exec(source.slice(i));
      const text = match?.[0] ?? '';
      tokens.push({ type: 'number', value: Number(text), text, position: i });
      i += text.length;
      continue;
    }
    if (isIdentStart(c)) {
      let end = i + 1;
      while (isIdentPart(source[end])) end++;
      tokens.push({ type: 'word', value: source.slice(i, end), position: i });
      i = end;
      continue;
    }
    const punct = PUNCTUATION.find((p) => source.startsWith(p, i));
    if (punct) {
      tokens.push({ type: 'punct', value: punct, position: i });
      i += punct.length;
      continue;
    }
    throw new ParseError(HINTS[c ?? ''] ?? `Unexpected character '${c}'`, i);
  }
  tokens.push({ type: 'end', position: source.length });
  return tokens;
}

const describeToken = (t: Token): string => {
  switch (t.type) {
    case 'end':
      return 'the end of the expression';
    case 'string':
      return 'a string';
    case 'number':
      return `'${t.text}'`;
    default:
      return `'${t.value}'`;
  }
};

const COMPARE_OPS: ReadonlySet<string> = new Set(['==', '!=', '<', '<=', '>', '>=', 'contains']);

/** A recursive-descent parser over the token list; each method is one rule of the grammar above. */
class Parser {
  private index = 0;
  private depth = 0;

  constructor(private readonly tokens: Token[]) {}

  parse(): Expr {
    const expr = this.or();
    const next = this.peek();
    if (next.type !== 'end') {
      if (this.isCompareOp(next)) {
        throw new ParseError(
          `Comparisons cannot be chained: put one side of ${describeToken(next)} in parentheses`,
          next.position,
        );
      }
      throw new ParseError(`Unexpected ${describeToken(next)} after the expression`, next.position);
    }
    return expr;
  }

  private peek(): Token {
    // The tokenizer always ends the list with an `end` token, and the parser never steps past it.
    return this.tokens[this.index] ?? { type: 'end', position: 0 };
  }

  private advance(): Token {
    const token = this.peek();
    if (token.type !== 'end') this.index++;
    return token;
  }

  private isWord(token: Token, ...words: string[]): boolean {
    return token.type === 'word' && words.includes(token.value);
  }

  private isPunct(token: Token, ...values: string[]): boolean {
    return token.type === 'punct' && values.includes(token.value);
  }

  private isCompareOp(token: Token): boolean {
    return (token.type === 'punct' || token.type === 'word') && COMPARE_OPS.has(token.value);
  }

  private nest<T>(at: Token, parse: () => T): T {
    if (++this.depth > MAX_EXPRESSION_DEPTH) {
      throw new ParseError(`Nested too deeply (more than ${MAX_EXPRESSION_DEPTH} levels)`, at.position);
    }
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private or(): Expr {
    let left = this.and();
    while (this.isPunct(this.peek(), '||') || this.isWord(this.peek(), 'or')) {
      this.advance();
      left = { kind: 'or', left, right: this.and() };
    }
    return left;
  }

  private and(): Expr {
    let left = this.not();
    while (this.isPunct(this.peek(), '&&') || this.isWord(this.peek(), 'and')) {
      this.advance();
      left = { kind: 'and', left, right: this.not() };
    }
    return left;
  }

  private not(): Expr {
    const token = this.peek();
    if (this.isPunct(token, '!') || this.isWord(token, 'not')) {
      this.advance();
      return this.nest(token, () => ({ kind: 'not', operand: this.not() }));
    }
    return this.cmp();
  }

  private cmp(): Expr {
    const left = this.value();
    const token = this.peek();
    if ((token.type !== 'punct' && token.type !== 'word') || !COMPARE_OPS.has(token.value)) return left;
    this.advance();
    return { kind: 'compare', op: token.value as CompareOp, left, right: this.value() };
  }

  private value(): Expr {
    const token = this.advance();
    switch (token.type) {
      case 'string':
        return { kind: 'literal', value: token.value };
      case 'number':
        return { kind: 'literal', value: token.value };
      case 'word':
        if (token.value === 'true') return { kind: 'literal', value: true };
        if (token.value === 'false') return { kind: 'literal', value: false };
        if (token.value === 'null') return { kind: 'literal', value: null };
        if (KEYWORDS.has(token.value))
          throw new ParseError(`Expected a value but found ${describeToken(token)}`, token.position);
        return this.path(token.value);
      case 'punct':
        if (token.value === '(') {
          const inner = this.nest(token, () => this.or());
          const close = this.advance();
          if (!this.isPunct(close, ')')) {
            throw new ParseError(`Expected ')' but found ${describeToken(close)}`, close.position);
          }
          return inner;
        }
        throw new ParseError(`Expected a value but found ${describeToken(token)}`, token.position);
      case 'end':
        throw new ParseError('Expected a value but found the end of the expression', token.position);
    }
  }

  private path(first: string): Expr {
    const segments: (string | number)[] = [first];
    for (;;) {
      const token = this.peek();
      if (this.isPunct(token, '.')) {
        this.advance();
        const name = this.advance();
        if (name.type !== 'word' || KEYWORDS.has(name.value)) {
          throw new ParseError(
            `Expected a name after '.' but found ${describeToken(name)} (write ["name"] instead)`,
            name.position,
          );
        }
        segments.push(name.value);
      } else if (this.isPunct(token, '[')) {
        this.advance();
        const key = this.advance();
        if (key.type === 'string') segments.push(key.value);
        else if (key.type === 'number' && Number.isSafeInteger(key.value) && key.value >= 0) segments.push(key.value);
        else {
          throw new ParseError(
            `Expected an index (0, 1, …) or a quoted key but found ${describeToken(key)}`,
            key.position,
          );
        }
        const close = this.advance();
        if (!this.isPunct(close, ']'))
          throw new ParseError(`Expected ']' but found ${describeToken(close)}`, close.position);
      } else {
        break;
      }
    }
    // `state.x` and `x` name the same value; a bare `state` names the whole scope.
    if (segments[0] === 'state') segments.shift();
    return { kind: 'path', segments };
  }
}

/** Parses an expression; a bad one answers a short message and the 0-based position where reading stopped. */
export function parseExpression(source: string): ParseResult {
  if (source.length > MAX_EXPRESSION_LENGTH) {
    return {
      ok: false,
      message: `The expression is too long (more than ${MAX_EXPRESSION_LENGTH} characters)`,
      position: MAX_EXPRESSION_LENGTH,
    };
  }
  try {
    return { ok: true, expr: new Parser(tokenize(source)).parse() };
  } catch (error) {
    if (error instanceof ParseError) return { ok: false, message: error.message, position: error.position };
    throw error;
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Follows a path through objects (by own key) and arrays (by index). Anything missing answers null rather than
 * throwing, and only own properties count, so `constructor` or `__proto__` never reach into JavaScript itself.
 */
export function lookup(scope: Record<string, unknown>, segments: (string | number)[]): unknown {
  let current: unknown = scope;
  for (const segment of segments) {
    if (typeof segment === 'number') {
      if (!Array.isArray(current) || !Number.isInteger(segment) || segment < 0 || segment >= current.length)
        return null;
      current = (current as unknown[])[segment];
    } else {
      if (!isPlainObject(current) || !Object.hasOwn(current, segment)) return null;
      current = current[segment];
    }
  }
  return current ?? null;
}

/** Python's truthiness, which both generated languages can state in one line: empty and zero values are false. */
export function truthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === '') return false;
  if (typeof value === 'number') return value !== 0 && !Number.isNaN(value);
  if (Array.isArray(value)) return value.length > 0;
  if (isPlainObject(value)) return Object.keys(value).length > 0;
  return true;
}

/** Deep equality of JSON values without coercion: `1 == "1"` and `true == 1` are false; absent counts as null. */
export function equals(a: unknown, b: unknown): boolean {
  const left = a ?? null;
  const right = b ?? null;
  if (Array.isArray(left) || Array.isArray(right)) {
    return (
      Array.isArray(left) &&
      Array.isArray(right) &&
      left.length === right.length &&
      left.every((item, i) => equals(item, right[i]))
    );
  }
  if (isPlainObject(left) || isPlainObject(right)) {
    if (!isPlainObject(left) || !isPlainObject(right)) return false;
    const keys = Object.keys(left).filter((k) => left[k] !== undefined);
    const otherKeys = Object.keys(right).filter((k) => right[k] !== undefined);
    return keys.length === otherKeys.length && keys.every((k) => Object.hasOwn(right, k) && equals(left[k], right[k]));
  }
  return left === right;
}

/** Orders two numbers or two strings (by UTF-16 code units); any other pair is not ordered and answers false. */
export function compare(op: '<' | '<=' | '>' | '>=', a: unknown, b: unknown): boolean {
  const ordered = (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
  if (!ordered) return false;
  const [x, y] = [a, b] as [number | string, number | string];
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    case '>=':
      return x >= y;
  }
}

/** Substring of a string, element of an array (by `equals`), or own key of an object; anything else is false. */
export function contains(a: unknown, b: unknown): boolean {
  if (typeof a === 'string') return typeof b === 'string' && a.includes(b);
  if (Array.isArray(a)) return a.some((item) => equals(item, b));
  if (isPlainObject(a)) return typeof b === 'string' && Object.hasOwn(a, b);
  return false;
}

/** Evaluates an expression over a scope; connectives and comparisons answer booleans, a path its value or null. */
export function evaluate(expr: Expr, scope: Record<string, unknown>): unknown {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'path':
      return lookup(scope, expr.segments);
    case 'not':
      return !truthy(evaluate(expr.operand, scope));
    case 'and':
      return truthy(evaluate(expr.left, scope)) && truthy(evaluate(expr.right, scope));
    case 'or':
      return truthy(evaluate(expr.left, scope)) || truthy(evaluate(expr.right, scope));
    case 'compare': {
      const left = evaluate(expr.left, scope);
      const right = evaluate(expr.right, scope);
      switch (expr.op) {
        case '==':
          return equals(left, right);
        case '!=':
          return !equals(left, right);
        case 'contains':
          return contains(left, right);
        default:
          return compare(expr.op, left, right);
      }
    }
  }
}

/** How a value reads inside text: null as nothing, scalars as themselves, structures as JSON. */
export function toText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? '';
}

/** The names expressions see: node results from `vars`, with the run's `input`, `messages` and last `output`. */
export function scopeOf(state: {
  input: string;
  messages: unknown[];
  vars: Record<string, unknown>;
}): Record<string, unknown> {
  return { ...state.vars, input: state.input, messages: state.messages, output: state.vars.output ?? null };
}

export type TemplatePart = { kind: 'text'; text: string } | { kind: 'expr'; expr: Expr; source: string };

export type TemplateParseResult =
  { ok: true; parts: TemplatePart[] } | { ok: false; message: string; position: number };

/** Where the `}}` closing an expression starts, skipping quoted strings so that `"}}"` inside one does not close it. */
function closingBraces(source: string, from: number): number {
  let quote: string | undefined;
  for (let i = from; i < source.length; i++) {
    const c = source[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '}' && source[i + 1] === '}') {
      return i;
    }
  }
  return -1;
}

/**
 * Splits text into literal parts and `{{ expression }}` parts. Positions in errors count from the start of the
 * whole text, so an editor can point at the mistake.
 */
export function parseTemplate(source: string): TemplateParseResult {
  const parts: TemplatePart[] = [];
  let from = 0;
  for (;;) {
    const open = source.indexOf('{{', from);
    if (open === -1) break;
    if (open > from) parts.push({ kind: 'text', text: source.slice(from, open) });
    const close = closingBraces(source, open + 2);
    if (close === -1) return { ok: false, message: "Unclosed '{{': end the expression with '}}'", position: open };
    const inner = source.slice(open + 2, close);
    const parsed = parseExpression(inner);
    if (!parsed.ok) return { ok: false, message: parsed.message, position: open + 2 + parsed.position };
    parts.push({ kind: 'expr', expr: parsed.expr, source: inner.trim() });
    from = close + 2;
  }
  if (from < source.length) parts.push({ kind: 'text', text: source.slice(from) });
  return { ok: true, parts };
}

/**
 * Fills a parsed template. A template that is exactly one expression (whitespace around allowed) answers the raw
 * value, so an argument `"{{ search.results }}"` passes a list or a number on as it is rather than as text.
 */
export function fillTemplate(parts: TemplatePart[], scope: Record<string, unknown>): unknown {
  const expressions = parts.filter((p) => p.kind === 'expr');
  const onlyBlankText = parts.every((p) => p.kind === 'expr' || p.text.trim() === '');
  const [single] = expressions;
  if (expressions.length === 1 && single && onlyBlankText) return evaluate(single.expr, scope);
  return parts.map((p) => (p.kind === 'text' ? p.text : toText(evaluate(p.expr, scope)))).join('');
}

function fillValue(value: unknown, scope: Record<string, unknown>): unknown {
  if (typeof value === 'string') {
    const parsed = parseTemplate(value);
    return parsed.ok && parsed.parts.some((p) => p.kind === 'expr') ? fillTemplate(parsed.parts, scope) : value;
  }
  if (Array.isArray(value)) return value.map((item) => fillValue(item, scope));
  if (isPlainObject(value)) return fillArgs(value, scope);
  return value;
}

/**
 * Fills the templates in every string of a tool's arguments, through nested objects and arrays. A string whose
 * template does not parse is passed on as written: validation reports it before a run, and a run never fails on it.
 */
export function fillArgs(args: Record<string, unknown>, scope: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).map(([key, value]) => [key, fillValue(value, scope)]));
}
