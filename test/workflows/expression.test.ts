import { describe, expect, it } from 'vitest';
import {
  type Expr,
  MAX_EXPRESSION_DEPTH,
  MAX_EXPRESSION_LENGTH,
  compare,
  contains,
  equals,
  evaluate,
  fillArgs,
  fillTemplate,
  lookup,
  parseExpression,
  parseTemplate,
  scopeOf,
  toText,
  truthy,
} from '../../workflows/expression.js';

/** The expression language of router conditions and tool-argument templates, interpreted without `eval`. */

const scope = scopeOf({
  input: 'What is LangGraph?',
  messages: [{ role: 'user', content: 'What is LangGraph?' }],
  vars: {
    question: 'graphs',
    count: 3,
    ratio: 0.5,
    zero: 0,
    empty: '',
    flag: true,
    off: false,
    list: ['a', 'b', { c: 1 }],
    none: [],
    obj: { 'x-y': 'dashed', nested: { deep: [10, 20] } },
    blank: {},
    search: { results: ['r1', 'r2'], total: 2 },
    output: 'last answer',
  },
});

/** Parses or fails the test with the parser's message, so a broken case names its cause. */
function parsed(source: string): Expr {
  const result = parseExpression(source);
  if (!result.ok) throw new Error(`${source}: ${result.message} at ${result.position}`);
  return result.expr;
}

const run = (source: string): unknown => evaluate(parsed(source), scope);

describe('parsing', () => {
  it.each<[string, Expr]>([
    ['true', { kind: 'literal', value: true }],
    ['false', { kind: 'literal', value: false }],
    ['null', { kind: 'literal', value: null }],
    ['42', { kind: 'literal', value: 42 }],
    ['-1.5', { kind: 'literal', value: -1.5 }],
    ['"a\\"b"', { kind: 'literal', value: 'a"b' }],
    ["'it\\'s'", { kind: 'literal', value: "it's" }],
    ['"tab\\tnew\\nslash\\\\"', { kind: 'literal', value: 'tab\tnew\nslash\\' }],
    ['question', { kind: 'path', segments: ['question'] }],
    ['state.question', { kind: 'path', segments: ['question'] }],
    ['state.a.b[0]', { kind: 'path', segments: ['a', 'b', 0] }],
    ['a.b[0]', { kind: 'path', segments: ['a', 'b', 0] }],
    ['a["x-y"]', { kind: 'path', segments: ['a', 'x-y'] }],
    ["state['x-y']", { kind: 'path', segments: ['x-y'] }],
    ['state', { kind: 'path', segments: [] }],
    ['_a1.b_2', { kind: 'path', segments: ['_a1', 'b_2'] }],
  ])('%s', (source, expected) => {
    expect(parsed(source)).toEqual(expected);
  });

  it('binds not tighter than and, and tighter than or; comparisons bind tightest', () => {
    const a = { kind: 'path', segments: ['a'] } as const;
    const b = { kind: 'path', segments: ['b'] } as const;
    const c = { kind: 'path', segments: ['c'] } as const;
    expect(parsed('a || b && c')).toEqual({ kind: 'or', left: a, right: { kind: 'and', left: b, right: c } });
    expect(parsed('a and b or c')).toEqual({ kind: 'or', left: { kind: 'and', left: a, right: b }, right: c });
    expect(parsed('!a && b')).toEqual({ kind: 'and', left: { kind: 'not', operand: a }, right: b });
    expect(parsed('not a == b')).toEqual({ kind: 'not', operand: { kind: 'compare', op: '==', left: a, right: b } });
    expect(parsed('(a || b) && c')).toEqual({ kind: 'and', left: { kind: 'or', left: a, right: b }, right: c });
    expect(parsed('a or b or c')).toEqual({ kind: 'or', left: { kind: 'or', left: a, right: b }, right: c });
  });

  it.each(['==', '!=', '<', '<=', '>', '>=', 'contains'] as const)('reads the operator %s', (op) => {
    expect(parsed(`a ${op} 1`)).toEqual({
      kind: 'compare',
      op,
      left: { kind: 'path', segments: ['a'] },
      right: { kind: 'literal', value: 1 },
    });
  });

  it('reads operators without spaces around them', () => {
    expect(parsed('a<=1&&!b')).toEqual({
      kind: 'and',
      left: {
        kind: 'compare',
        op: '<=',
        left: { kind: 'path', segments: ['a'] },
        right: { kind: 'literal', value: 1 },
      },
      right: { kind: 'not', operand: { kind: 'path', segments: ['b'] } },
    });
  });

  it.each<[string, string, number, RegExp]>([
    ['empty', '', 0, /Expected a value/],
    ['blank', '   ', 3, /Expected a value/],
    ['unexpected character', 'a # b', 2, /Unexpected character '#'/],
    ['single =', 'a = 1', 2, /'=='/],
    ['single &', 'a & b', 2, /'&&'/],
    ['single |', 'a | b', 2, /'\|\|'/],
    ['unterminated string', 'a == "abc', 5, /Unterminated string/],
    ['unknown escape', '"a\\qb"', 2, /Unknown escape/],
    ['missing right operand', 'a ==', 4, /Expected a value but found the end/],
    ['missing operand of and', 'a && ', 5, /Expected a value/],
    ['operator where a value belongs', '== a', 0, /Expected a value but found '=='/],
    ['keyword as a value', 'contains', 0, /Expected a value but found 'contains'/],
    ['unclosed parenthesis', '(a || b', 7, /Expected '\)'/],
    ['stray closing parenthesis', 'a)', 1, /Unexpected '\)' after the expression/],
    ['two values in a row', 'a b', 2, /Unexpected 'b' after the expression/],
    ['chained comparison', 'a == b == c', 7, /cannot be chained/],
    ['keyword after a dot', 'a.not', 2, /Expected a name after '\.'/],
    ['number after a dot', 'a.0', 2, /Expected a name after '\.'/],
    ['non-integer index', 'a[1.5]', 2, /Expected an index/],
    ['negative index', 'a[-1]', 2, /Expected an index/],
    ['name as index', 'a[b]', 2, /Expected an index/],
    ['unclosed bracket', 'a[0', 3, /Expected '\]'/],
    ['lone minus', '- 1', 0, /Unexpected character '-'/],
  ])('%s is an error with its position', (_kind, source, position, message) => {
    const result = parseExpression(source);
    expect(result).toMatchObject({ ok: false, position });
    if (!result.ok) expect(result.message).toMatch(message);
  });

  it(`accepts ${MAX_EXPRESSION_LENGTH} characters and refuses one more`, () => {
    const longest = `"${'x'.repeat(MAX_EXPRESSION_LENGTH - 2)}"`;
    expect(parseExpression(longest).ok).toBe(true);
    expect(parseExpression(`${longest} `)).toMatchObject({ ok: false, position: MAX_EXPRESSION_LENGTH });
  });

  it(`accepts ${MAX_EXPRESSION_DEPTH} levels of nesting and refuses one more`, () => {
    const nested = (n: number) => `${'('.repeat(n)}a${')'.repeat(n)}`;
    expect(parseExpression(nested(MAX_EXPRESSION_DEPTH)).ok).toBe(true);
    expect(parseExpression(nested(MAX_EXPRESSION_DEPTH + 1))).toMatchObject({
      ok: false,
      position: MAX_EXPRESSION_DEPTH,
      message: expect.stringMatching(/Nested too deeply/) as unknown,
    });
    expect(parseExpression(`${'!'.repeat(MAX_EXPRESSION_DEPTH)}a`).ok).toBe(true);
    expect(parseExpression(`${'not '.repeat(MAX_EXPRESSION_DEPTH + 1)}a`)).toMatchObject({
      ok: false,
      position: MAX_EXPRESSION_DEPTH * 4,
    });
  });
});

describe('evaluation', () => {
  it.each<[string, unknown]>([
    // paths, with and without `state.`, through arrays and bracketed keys
    ['question', 'graphs'],
    ['state.question', 'graphs'],
    ['input', 'What is LangGraph?'],
    ['output', 'last answer'],
    ['messages[0].content', 'What is LangGraph?'],
    ['list[1]', 'b'],
    ['list[2].c', 1],
    ['state.list[2]["c"]', 1],
    ['obj["x-y"]', 'dashed'],
    ['obj.nested.deep[1]', 20],
    ['search.results', ['r1', 'r2']],
    // missing values answer null
    ['missing', null],
    ['missing.deeper[0]', null],
    ['list[9]', null],
    ['question.length', null],
    ['question[0]', null],
    ['list.length', null],
    ['obj[0]', null],
    ['count.x', null],
    ['missing == null', true],
    // equality: deep, without coercion
    ['count == 3', true],
    ['count == 3.0', true],
    ['count == "3"', false],
    ['flag == 1', false],
    ['off == 0', false],
    ['empty == null', false],
    ['count != 3', false],
    ['count != "3"', true],
    ['list == list', true],
    ['search.results == search.results', true],
    ['obj.nested == obj.nested', true],
    ['obj.nested == obj', false],
    ['none == blank', false],
    ['null == null', true],
    // ordering: only numbers with numbers and strings with strings
    ['count > 2', true],
    ['count >= 3', true],
    ['count < 3', false],
    ['count <= 3', true],
    ['ratio < 1', true],
    ['-1 < 0', true],
    ['"a" < "b"', true],
    ['"B" < "a"', true],
    ['"10" < "9"', true],
    ['count > "2"', false],
    ['count < "4"', false],
    ['missing < 1', false],
    ['missing >= 0', false],
    ['flag > off', false],
    // contains: substring, element, key
    ['question contains "raph"', true],
    ['question contains "Raph"', false],
    ['list contains "b"', true],
    ['list contains "c"', false],
    ['list contains obj', false],
    ['search.results contains "r2"', true],
    ['obj contains "x-y"', true],
    ['obj contains "missing"', false],
    ['obj contains 1', false],
    ['count contains 3', false],
    ['question contains 3', false],
    ['missing contains "a"', false],
    // connectives answer booleans
    ['question && count', true],
    ['question and zero', false],
    ['zero || empty', false],
    ['zero or count', true],
    ['!question', false],
    ['not zero', true],
    ['!!list', true],
    ['count > 2 && question contains "graph"', true],
    ['count > 5 || flag', true],
    ['not (count > 5 or off)', true],
    ['!count > 5', true],
    // literals
    ['"text"', 'text'],
    ['1.25', 1.25],
    ['null', null],
  ])('%s → %j', (source, expected) => {
    expect(run(source)).toEqual(expected);
  });

  it.each<[string, boolean]>([
    ['question', true],
    ['empty', false],
    ['count', true],
    ['zero', false],
    ['flag', true],
    ['off', false],
    ['list', true],
    ['none', false],
    ['obj', true],
    ['blank', false],
    ['missing', false],
  ])('a bare key %s is %s as a condition', (source, expected) => {
    expect(truthy(run(source))).toBe(expected);
  });

  it('short-circuits: the right side of and/or is not looked up when the left decides', () => {
    const seen: string[] = [];
    const watched = new Proxy<Record<string, unknown>>(
      { yes: true, no: false },
      {
        getOwnPropertyDescriptor(target, key) {
          seen.push(String(key));
          return Reflect.getOwnPropertyDescriptor(target, key);
        },
      },
    );
    expect(evaluate(parsed('no && other'), watched)).toBe(false);
    expect(evaluate(parsed('yes || other'), watched)).toBe(true);
    expect(seen).not.toContain('other');
  });

  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'])(
    'never reaches into JavaScript: %s answers null at any depth',
    (name) => {
      expect(run(name)).toBeNull();
      expect(run(`obj["${name}"]`)).toBeNull();
      expect(run(`question["${name}"]`)).toBeNull();
      expect(run(`list["${name}"]`)).toBeNull();
      expect(run(`obj contains "${name}"`)).toBe(false);
      expect(fillArgs({ v: `{{ obj["${name}"] }}` }, scope)).toEqual({ v: null });
    },
  );

  it('reads own keys that happen to share a name with JavaScript internals', () => {
    const own = JSON.parse('{"constructor": "mine", "__proto__": {"x": 1}}') as Record<string, unknown>;
    expect(lookup(own, ['constructor'])).toBe('mine');
    expect(lookup(own, ['__proto__', 'x'])).toBe(1);
  });

  it('never throws on odd scopes', () => {
    const odd: Record<string, unknown> = { u: undefined, n: Number.NaN, d: new Date(0) };
    expect(evaluate(parsed('u == null'), odd)).toBe(true);
    expect(evaluate(parsed('u.x'), odd)).toBeNull();
    expect(evaluate(parsed('n'), odd)).toBeNaN();
    expect(truthy(Number.NaN)).toBe(false);
    expect(evaluate(parsed('d.x contains 1'), odd)).toBe(false);
  });
});

describe('the value functions the generated code mirrors', () => {
  it('lookup walks objects by key and arrays by index only', () => {
    expect(lookup({ a: [{ b: 1 }] }, ['a', 0, 'b'])).toBe(1);
    expect(lookup({ a: [1] }, ['a', '0'])).toBeNull();
    expect(lookup({ a: { 0: 'x' } }, ['a', 0])).toBeNull();
    expect(lookup({ a: [1] }, ['a', 1])).toBeNull();
    expect(lookup({ a: [1] }, ['a', 0.5])).toBeNull();
    expect(lookup({ a: null }, ['a', 'b'])).toBeNull();
    expect(lookup({ a: 1 }, [])).toEqual({ a: 1 });
  });

  it('equals compares JSON values deeply and treats absent as null', () => {
    expect(equals({ a: [1, { b: 'x' }] }, { a: [1, { b: 'x' }] })).toBe(true);
    expect(equals({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
    expect(equals({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(equals({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(equals([1, 2], [2, 1])).toBe(false);
    expect(equals([], {})).toBe(false);
    expect(equals(undefined, null)).toBe(true);
    expect(equals(0, false)).toBe(false);
    expect(equals('', null)).toBe(false);
  });

  it('compare orders only like with like', () => {
    expect(compare('<', 1, 2)).toBe(true);
    expect(compare('>=', 'b', 'a')).toBe(true);
    expect(compare('<', 1, '2')).toBe(false);
    expect(compare('<', null, 1)).toBe(false);
    expect(compare('<=', [1], [2])).toBe(false);
    expect(compare('>', true, false)).toBe(false);
  });

  it('contains answers false for any pair it does not define', () => {
    expect(contains('abc', 'b')).toBe(true);
    expect(contains([[1]], [1])).toBe(true);
    expect(contains({ k: 1 }, 'k')).toBe(true);
    expect(contains('a1', 1)).toBe(false);
    expect(contains(null, null)).toBe(false);
    expect(contains(5, 5)).toBe(false);
  });

  it.each<[unknown, string]>([
    [null, ''],
    [undefined, ''],
    ['text', 'text'],
    [3, '3'],
    [1.5, '1.5'],
    [true, 'true'],
    [false, 'false'],
    [[1, 'a'], '[1,"a"]'],
    [{ a: null }, '{"a":null}'],
  ])('toText(%j) is %j', (value, text) => {
    expect(toText(value)).toBe(text);
  });

  it('scopeOf puts node results beside input, messages and output, which answers null before any node set it', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    expect(scopeOf({ input: 'hi', messages, vars: { agent: 'hello' } })).toEqual({
      agent: 'hello',
      input: 'hi',
      messages,
      output: null,
    });
    expect(scopeOf({ input: 'hi', messages: [], vars: { output: 'x', input: 'shadow' } })).toMatchObject({
      input: 'hi',
      output: 'x',
    });
  });
});

describe('templates', () => {
  it('splits text and expressions, keeping the text as it is', () => {
    const result = parseTemplate('Find {{ state.topic }} now, {{n}}}');
    expect(result).toEqual({
      ok: true,
      parts: [
        { kind: 'text', text: 'Find ' },
        { kind: 'expr', expr: { kind: 'path', segments: ['topic'] }, source: 'state.topic' },
        { kind: 'text', text: ' now, ' },
        { kind: 'expr', expr: { kind: 'path', segments: ['n'] }, source: 'n' },
        { kind: 'text', text: '}' },
      ],
    });
  });

  it('does not end an expression at "}}" inside a string', () => {
    const result = parseTemplate('{{ question == "}}" }}!');
    expect(result.ok && result.parts.map((p) => p.kind)).toEqual(['expr', 'text']);
  });

  it('text without braces is one text part; an empty template has none', () => {
    expect(parseTemplate('plain } text {')).toEqual({ ok: true, parts: [{ kind: 'text', text: 'plain } text {' }] });
    expect(parseTemplate('')).toEqual({ ok: true, parts: [] });
  });

  it.each<[string, number, RegExp]>([
    ['Find {{ topic', 5, /Unclosed '\{\{'/],
    ['{{ a }} and {{ b', 12, /Unclosed/],
    ['{{ "}} }}', 0, /Unclosed/],
    ['x {{ }}', 5, /Expected a value/],
    ['ab {{ a = 1 }}', 8, /'=='/],
    ['{{a b}}', 4, /Unexpected 'b'/],
  ])('%j is an error at %i, counted in the whole text', (source, position, message) => {
    const result = parseTemplate(source);
    expect(result).toMatchObject({ ok: false, position });
    if (!result.ok) expect(result.message).toMatch(message);
  });

  const fill = (source: string): unknown => {
    const result = parseTemplate(source);
    if (!result.ok) throw new Error(result.message);
    return fillTemplate(result.parts, scope);
  };

  it.each<[string, unknown]>([
    ['{{ search.results }}', ['r1', 'r2']],
    ['  {{ count }}\n', 3],
    ['{{ missing }}', null],
    ['{{ count > 2 }}', true],
    ['{{ obj.nested }}', { deep: [10, 20] }],
    ['Find {{ state.question }} now', 'Find graphs now'],
    ['{{count}}{{count}}', '33'],
    ['n={{ count }}', 'n=3'],
    ['[{{ missing }}]', '[]'],
    ['{{ search.results }} ({{ flag }})', '["r1","r2"] (true)'],
    ['no templates', 'no templates'],
    ['', ''],
  ])('%j fills to %j', (source, expected) => {
    expect(fill(source)).toEqual(expected);
  });

  it('fillArgs fills strings through nested objects and arrays, and leaves everything else as it is', () => {
    const args = {
      query: '{{ state.question }}',
      label: 'about {{ question }}',
      limit: 5,
      exact: false,
      nothing: null,
      filters: { ids: ['{{ list[0] }}', '{{ count }}', 7], deeper: { q: 'q={{ input }}' } },
      broken: 'Find {{ topic',
      plain: 'no braces',
    };
    const filled = fillArgs(args, scope);
    expect(filled).toEqual({
      query: 'graphs',
      label: 'about graphs',
      limit: 5,
      exact: false,
      nothing: null,
      filters: { ids: ['a', 3, 7], deeper: { q: 'q=What is LangGraph?' } },
      broken: 'Find {{ topic',
      plain: 'no braces',
    });
    expect(args.filters.ids[0]).toBe('{{ list[0] }}');
  });
});
