import type { Expr, Literal } from '../expression.js';
import { parseTemplate } from '../expression.js';
import { type WorkflowPlan, planWorkflow } from '../plan.js';
import { HUMAN_ANSWER_MAX_LENGTH } from '../runtime.js';
import {
  type AgentNode,
  type HumanNode,
  type ToolNode,
  type Workflow,
  type WorkflowNode,
  questionOf,
  systemPromptOf,
} from '../schema.js';
import { type CodegenTool, type McpServerPlan, planMcpServers, serverSummary } from './mcp.js';
import { LANGGRAPH_JS_RANGE, MCP_SDK_JS_RANGE } from './versions.js';

/**
 * TypeScript source for a workflow: the graph `compileWorkflow` builds, written out as a module a developer keeps
 * and runs with `@langchain/langgraph` alone. Conditions and templates become TypeScript expressions over a few
 * helpers that restate the expression language's semantics, so the module needs nothing from this service.
 *
 * The code is laid out the way Prettier's defaults lay it out (80 columns, double quotes, trailing commas): the
 * layout below is Prettier's document algorithm, fed with the documents Prettier builds for these constructs.
 */

// ---------------------------------------------------------------------------------------------------------------
// Layout: Prettier's document model, reduced to the parts this generator uses.

type Doc = string | Doc[] | Group | Indent | Line | IfBreak | IndentIfBreak | BreakParent;
interface Group {
  kind: 'group';
  contents: Doc;
  break: boolean;
  id?: symbol;
  /** Alternatives, tried in order when the group does not fit flat (Prettier's conditional group). */
  states?: Doc[];
}
interface Indent {
  kind: 'indent';
  contents: Doc;
}
interface Line {
  kind: 'line';
  soft: boolean;
  hard: boolean;
}
interface IfBreak {
  kind: 'if-break';
  broken: Doc;
  flat: Doc;
}
interface IndentIfBreak {
  kind: 'indent-if-break';
  contents: Doc;
  groupId: symbol;
}
interface BreakParent {
  kind: 'break-parent';
}

const WIDTH = 80;
const INDENT = '  ';

const group = (contents: Doc, options: { shouldBreak?: boolean; id?: symbol } = {}): Group => ({
  kind: 'group',
  contents,
  break: options.shouldBreak ?? false,
  ...(options.id && { id: options.id }),
});
const conditionalGroup = (states: Doc[]): Group => ({ kind: 'group', contents: states[0] ?? '', break: false, states });
const indent = (contents: Doc): Indent => ({ kind: 'indent', contents });
const line: Line = { kind: 'line', soft: false, hard: false };
const softline: Line = { kind: 'line', soft: true, hard: false };
const breakParent: BreakParent = { kind: 'break-parent' };
const hardline: Doc = [{ kind: 'line', soft: false, hard: true }, breakParent];
const ifBreak = (broken: Doc, flat: Doc = ''): IfBreak => ({ kind: 'if-break', broken, flat });
const indentIfBreak = (contents: Doc, groupId: symbol): IndentIfBreak => ({
  kind: 'indent-if-break',
  contents,
  groupId,
});
const join = (separator: Doc, docs: Doc[]): Doc[] => docs.flatMap((d, i) => (i === 0 ? [d] : [separator, d]));

/** Whether a document holds a forced break (Prettier's `willBreak`). */
function willBreak(doc: Doc): boolean {
  if (typeof doc === 'string') return false;
  if (Array.isArray(doc)) return doc.some(willBreak);
  switch (doc.kind) {
    case 'group':
      return doc.break || willBreak(doc.contents);
    case 'line':
      return doc.hard;
    case 'break-parent':
      return true;
    case 'if-break':
      return willBreak(doc.broken) || willBreak(doc.flat);
    default:
      return willBreak(doc.contents);
  }
}

/** A group holding a forced break breaks, and so do the groups around it (conditional groups excepted). */
function propagateBreaks(doc: Doc, groups: Group[] = []): void {
  if (typeof doc === 'string') return;
  if (Array.isArray(doc)) {
    for (const d of doc) propagateBreaks(d, groups);
    return;
  }
  const breakTop = () => {
    const top = groups.at(-1);
    if (top && !top.states) top.break = true;
  };
  switch (doc.kind) {
    case 'break-parent':
      breakTop();
      return;
    case 'group':
      groups.push(doc);
      for (const d of doc.states ?? [doc.contents]) propagateBreaks(d, groups);
      groups.pop();
      if (doc.break) breakTop();
      return;
    case 'if-break':
      propagateBreaks(doc.broken, groups);
      propagateBreaks(doc.flat, groups);
      return;
    case 'line':
      return;
    default:
      propagateBreaks(doc.contents, groups);
  }
}

type Mode = 'flat' | 'break';
interface Command {
  indentation: string;
  mode: Mode;
  doc: Doc;
}

/** Columns a string takes in an editor: wide (CJK, emoji) characters take two, marks and controls none. */
function textWidth(text: string): number {
  if (!/[^\x20-\x7e]/.test(text)) return text.length;
  let width = 0;
  for (const c of text) {
    if (/[\p{Cc}\p{Mn}\p{Me}]/u.test(c)) continue;
    width += /[\p{Extended_Pictographic}\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60]/u.test(c)
      ? 2
      : 1;
  }
  return width;
}

/** Whether `next` fits in `width` columns, followed by the rest of the line (Prettier's `fits`). */
function fits(next: Command, rest: Command[], width: number): boolean {
  let restIndex = rest.length;
  const commands: { mode: Mode; doc: Doc }[] = [next];
  let remaining = width;
  while (remaining >= 0) {
    const command = commands.pop() ?? (restIndex > 0 ? rest[--restIndex] : undefined);
    if (!command) return true;
    const { mode, doc } = command;
    if (typeof doc === 'string') {
      remaining -= textWidth(doc);
    } else if (Array.isArray(doc)) {
      for (let i = doc.length - 1; i >= 0; i--) commands.push({ mode, doc: doc[i] ?? '' });
    } else {
      switch (doc.kind) {
        case 'group': {
          const groupMode = doc.break ? 'break' : mode;
          const contents = doc.states && groupMode === 'break' ? (doc.states.at(-1) ?? '') : doc.contents;
          commands.push({ mode: groupMode, doc: contents });
          break;
        }
        case 'if-break':
          commands.push({ mode, doc: mode === 'break' ? doc.broken : doc.flat });
          break;
        case 'line':
          if (mode === 'break' || doc.hard) return true;
          if (!doc.soft) remaining -= 1;
          break;
        case 'break-parent':
          break;
        default:
          commands.push({ mode, doc: doc.contents });
      }
    }
  }
  return false;
}

/** Prints a document in `WIDTH` columns (Prettier's `printDocToString`, without line suffixes or fills). */
function printDoc(doc: Doc): string {
  propagateBreaks(doc);
  const groupModes = new Map<symbol, Mode>();
  const commands: Command[] = [{ indentation: '', mode: 'break', doc }];
  const out: string[] = [];
  let position = 0;
  let shouldRemeasure = false;
  for (let command = commands.pop(); command; command = commands.pop()) {
    const { indentation, mode, doc: current } = command;
    if (typeof current === 'string') {
      out.push(current);
      position += textWidth(current);
      continue;
    }
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) commands.push({ indentation, mode, doc: current[i] ?? '' });
      continue;
    }
    switch (current.kind) {
      case 'indent':
        commands.push({ indentation: indentation + INDENT, mode, doc: current.contents });
        break;
      case 'group': {
        const next = ((): Command => {
          if (mode === 'flat' && !shouldRemeasure) {
            return { indentation, mode: current.break ? 'break' : 'flat', doc: current.contents };
          }
          shouldRemeasure = false;
          const flat: Command = { indentation, mode: 'flat', doc: current.contents };
          if (!current.break && fits(flat, commands, WIDTH - position)) return flat;
          const { states } = current;
          if (!states) return { indentation, mode: 'break', doc: current.contents };
          if (!current.break) {
            for (const state of states.slice(1, -1)) {
              const candidate: Command = { indentation, mode: 'flat', doc: state };
              if (fits(candidate, commands, WIDTH - position)) return candidate;
            }
          }
          return { indentation, mode: 'break', doc: states.at(-1) ?? '' };
        })();
        commands.push(next);
        if (current.id) groupModes.set(current.id, next.mode);
        break;
      }
      case 'if-break':
        commands.push({ indentation, mode, doc: mode === 'break' ? current.broken : current.flat });
        break;
      case 'indent-if-break': {
        const broken = groupModes.get(current.groupId) === 'break';
        commands.push({ indentation, mode, doc: broken ? indent(current.contents) : current.contents });
        break;
      }
      case 'line':
        if (mode === 'flat' && !current.hard) {
          if (!current.soft) {
            out.push(' ');
            position += 1;
          }
          break;
        }
        if (mode === 'flat') shouldRemeasure = true;
        trimTrailingSpace(out);
        out.push('\n', indentation);
        position = indentation.length;
        break;
      case 'break-parent':
        break;
    }
  }
  return out.join('');
}

/** Drops the spaces that end the output so far (a line never ends in white space). */
function trimTrailingSpace(out: string[]): void {
  for (let last = out.at(-1); last !== undefined; last = out.at(-1)) {
    const trimmed = last.replace(/[ \t]+$/, '');
    if (trimmed) {
      out[out.length - 1] = trimmed;
      return;
    }
    out.pop();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// A small TypeScript syntax tree, printed the way Prettier prints each construct.

type Js =
  | { type: 'name'; text: string }
  | { type: 'string'; value: string }
  | { type: 'number'; value: number }
  | { type: 'keyword'; text: 'true' | 'false' | 'null' }
  | { type: 'call'; callee: string; args: Js[] }
  | { type: 'array'; items: Js[] }
  | { type: 'object'; props: Property[]; expand?: boolean }
  | { type: 'binary'; op: '&&' | '||' | '+'; left: Js; right: Js }
  | { type: 'not'; operand: Js }
  | { type: 'await'; operand: Js }
  | { type: 'arrow'; params: string[]; body: Js };

interface Property {
  key: string;
  /** `{ input }` rather than `{ input: input }`. */
  shorthand?: boolean;
  value: Js;
}

const name = (text: string): Js => ({ type: 'name', text });
const str = (value: string): Js => ({ type: 'string', value });
const call = (callee: string, ...args: Js[]): Js => ({ type: 'call', callee, args });
const object = (props: Property[], expand = false): Js => ({ type: 'object', props, expand });
const prop = (key: string, value: Js): Property => ({ key, value });

/**
 * A string literal that stays correct whatever the text holds: quotes and backslashes escaped, and every character
 * that is invisible or would end a line (controls, separators, lone surrogates) written as an escape. Like
 * Prettier, it uses double quotes unless the text holds more of them than single quotes.
 */
function tsStringLiteral(value: string): string {
  const doubles = value.split('"').length - 1;
  const singles = value.split("'").length - 1;
  const quote = doubles > singles ? "'" : '"';
  let out = '';
  for (const c of value) {
    if (c === quote || c === '\\') out += `\\${c}`;
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (UNPRINTABLE.test(c)) out += unicodeEscape(c);
    else out += c;
  }
  return quote + out + quote;
}

/** Characters written as escapes: controls, format and private-use characters, separators, lone surrogates. */
const UNPRINTABLE = /[\p{C}\p{Zl}\p{Zp}]|(?! )\p{Zs}/u;

function unicodeEscape(c: string): string {
  const code = c.codePointAt(0) ?? 0;
  return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** An object key as Prettier leaves it: bare when it can be, quoted otherwise, computed for `__proto__`. */
function printKey(key: string): string {
  // `__proto__: x` (bare or quoted) would set the prototype; the computed form makes it an own property.
  if (key === '__proto__') return `[${tsStringLiteral(key)}]`;
  return IDENTIFIER.test(key) ? key : tsStringLiteral(key);
}

const isBinary = (node: Js): node is Extract<Js, { type: 'binary' }> => node.type === 'binary';
const precedence = (op: '&&' | '||' | '+'): number => ({ '||': 1, '&&': 2, '+': 3 })[op];

/** Whether a call's last argument is laid out hugged, as in `f(a, {` … `})` (Prettier's `shouldGroupLast`). */
function hugsLast(args: Js[]): boolean {
  const last = args.at(-1);
  const penultimate = args.at(-2);
  if (!last) return false;
  const expandable =
    (last.type === 'object' && last.props.length > 0) ||
    (last.type === 'array' && last.items.length > 0) ||
    (last.type === 'arrow' && (last.body.type === 'call' || last.body.type === 'object' || last.body.type === 'array'));
  const numbersOnly = last.type === 'array' && last.items.every((item) => item.type === 'number');
  return expandable && penultimate?.type !== last.type && !(args.length > 1 && numbersOnly);
}

function printArgs(args: Js[]): Doc {
  if (args.length === 0) return '()';
  const printed = args.map((a, i) => printJs(a, { hug: i === args.length - 1 && hugsLast(args) }));
  const separated = printed.map((d, i) => (i === printed.length - 1 ? d : [d, ',', line]));
  const allBroken = () => group(['(', indent([line, ...separated]), ifBreak(','), line, ')'], { shouldBreak: true });
  if (hugsLast(args)) {
    const head = separated.slice(0, -1);
    if (head.some(willBreak)) return allBroken();
    const last = printed.at(-1) ?? '';
    if (willBreak(last)) {
      return [breakParent, conditionalGroup([['(', ...head, group(last, { shouldBreak: true }), ')'], allBroken()])];
    }
    return conditionalGroup([
      ['(', ...head, last, ')'],
      ['(', ...head, group(last, { shouldBreak: true }), ')'],
      allBroken(),
    ]);
  }
  return group(['(', indent([softline, ...separated]), ifBreak(','), softline, ')'], {
    shouldBreak: separated.some(willBreak),
  });
}

/** The parts of a chain of one operator (`a && b && c`), flattened as Prettier flattens it. */
function binaryParts(node: Extract<Js, { type: 'binary' }>, insideParens: boolean, parentType?: string): Doc[] {
  const left = node.left;
  const parts =
    isBinary(left) && left.op === node.op
      ? binaryParts(left, insideParens, 'binary')
      : [group(printOperand(left, node))];
  const right: Doc = [node.op, line, printOperand(node.right, node)];
  const grouped =
    !(insideParens && node.op !== '+') && parentType !== 'binary' && !(isBinary(left) && left.op === node.op);
  return [...parts, ' ', grouped ? group(right) : right];
}

/** An operand of a binary expression, parenthesised where the operators differ. */
function printOperand(operand: Js, parent: Extract<Js, { type: 'binary' }>): Doc {
  const printed = printJs(operand, { parentBinary: true });
  if (!isBinary(operand) || operand.op === parent.op) return printed;
  return precedence(operand.op) < precedence(parent.op) || operand.op !== '+' ? ['(', printed, ')'] : printed;
}

interface Context {
  /** The last argument of a call, laid out hugged. */
  hug?: boolean;
  /** Directly inside the parentheses of an `if`. */
  insideParens?: boolean;
  /** The value of an object property (whose layout indents it already). */
  propertyValue?: boolean;
  parentBinary?: boolean;
}

function printJs(node: Js, context: Context = {}): Doc {
  switch (node.type) {
    case 'name':
    case 'keyword':
      return node.text;
    case 'string':
      return tsStringLiteral(node.value);
    case 'number':
      return String(node.value);
    case 'call':
      return [node.callee, printArgs(node.args)];
    case 'array':
      if (node.items.length === 0) return '[]';
      return group(
        [
          '[',
          indent([
            softline,
            join(
              [',', line],
              node.items.map((i) => printJs(i)),
            ),
          ]),
          ifBreak(','),
          softline,
          ']',
        ],
        {
          shouldBreak:
            node.items.length > 1 &&
            node.items.every(
              (i, _, all) =>
                i.type === all[0]?.type &&
                ((i.type === 'object' && i.props.length > 1) || (i.type === 'array' && i.items.length > 1)),
            ),
        },
      );
    case 'object':
      if (node.props.length === 0) return '{}';
      return group(['{', indent([line, join([',', line], node.props.map(printProperty))]), ifBreak(','), line, '}'], {
        shouldBreak: node.expand === true,
      });
    case 'binary': {
      const parts = binaryParts(node, context.insideParens === true);
      if (context.insideParens) return parts;
      if (context.propertyValue || context.parentBinary) return group(parts);
      return group([parts[0] ?? '', indent(parts.slice(1))]);
    }
    case 'not': {
      const operand = printJs(node.operand);
      return node.operand.type === 'binary' ? ['!(', operand, ')'] : ['!', operand];
    }
    case 'await':
      return ['await ', printJs(node.operand)];
    case 'arrow': {
      const signature = group(['(', node.params.join(', '), ')']);
      const body = printJs(node.body);
      if (node.body.type === 'object' || node.body.type === 'array') return group([signature, ' => ', body]);
      const tail = context.hug ? [ifBreak(','), softline] : [];
      return group([signature, ' =>', group([indent([line, body]), ...tail])]);
    }
  }
}

/** A property as Prettier lays out `key: value` (its assignment layouts, reduced to the values used here). */
function printProperty(p: Property): Doc {
  const key = printKey(p.key);
  if (p.shorthand) return key;
  const value = printJs(p.value, { propertyValue: true });
  const shortKey = textWidth(key) < INDENT.length + 3;
  const v = p.value;
  if (v.type === 'binary' || (v.type === 'string' && !shortKey) || (v.type === 'call' && poorlyBreakable(v))) {
    return group([key, ':', group(indent([line, value]))]);
  }
  if (shortKey || v.type === 'number' || v.type === 'keyword') return group([key, ': ', value]);
  const id = Symbol('property');
  return group([key, ':', group(indent(line), { id }), indentIfBreak(value, id)]);
}

/** A call with no argument or one short one: breaking inside it helps nothing (Prettier's rule of the same name). */
function poorlyBreakable(node: Extract<Js, { type: 'call' }>): boolean {
  const [only, ...more] = node.args;
  if (!only) return true;
  if (more.length > 0) return false;
  const limit = WIDTH / 4;
  return (
    (only.type === 'name' && only.text.length <= limit) ||
    (only.type === 'string' && tsStringLiteral(only.value).length <= limit) ||
    only.type === 'number' ||
    only.type === 'keyword'
  );
}

/** `const name = value;` as Prettier lays out an assignment (the layouts its values here need). */
function printConst(binding: string, value: Js): Doc {
  const inner = value.type === 'await' ? value.operand : value;
  const printed = printJs(value);
  if (inner.type === 'string' || (inner.type === 'call' && poorlyBreakable(inner)) || inner.type === 'binary') {
    return group([`const ${binding} =`, group(indent([line, printed])), ';']);
  }
  const id = Symbol('assignment');
  return [group([`const ${binding} =`, group(indent(line), { id }), indentIfBreak(printed, id)]), ';'];
}

function printReturn(value: Js): Doc {
  if (value.type === 'binary') {
    return ['return ', group([ifBreak('('), indent([softline, printJs(value)]), softline, ifBreak(')')]), ';'];
  }
  return ['return ', printJs(value), ';'];
}

/** `if (test) return value;` — the test breaks inside its parentheses, the statement after them. */
function printIfReturn(test: Js, value: Js): Doc {
  const printedTest = printJs(test, { insideParens: true });
  return group(['if (', group([indent([softline, printedTest]), softline]), ')', indent([line, printReturn(value)])]);
}

/** A method chain (`new StateGraph(…)` then one call per line), as Prettier breaks a long member chain. */
function printChain(head: string, calls: { method: string; args: Js[] }[]): Doc {
  return group([head, indent(calls.map((c) => [hardline, '.', c.method, printArgs(c.args)]))]);
}

// ---------------------------------------------------------------------------------------------------------------
// Expressions and templates as TypeScript.

/** Helpers the generated module may need; each is emitted only when something uses it. */
type Helper = 'isObject' | 'get' | 'truthy' | 'equals' | 'compare' | 'contains' | 'toText' | 'answerOf';

const HELPER_NEEDS: Record<Helper, Helper[]> = {
  isObject: [],
  get: ['isObject'],
  truthy: ['isObject'],
  equals: ['isObject'],
  compare: [],
  contains: ['isObject', 'equals'],
  toText: [],
  answerOf: ['isObject', 'toText'],
};

class Emitter {
  readonly helpers = new Set<Helper>();
  /** How many paths read the state so far: a routing function that reads none must not name its parameter. */
  reads = 0;

  use(helper: Helper): void {
    if (this.helpers.has(helper)) return;
    this.helpers.add(helper);
    for (const need of HELPER_NEEDS[helper]) this.use(need);
  }

  literal(value: Literal): Js {
    if (value === null) return { type: 'keyword', text: 'null' };
    if (typeof value === 'boolean') return { type: 'keyword', text: value ? 'true' : 'false' };
    if (typeof value === 'number') return { type: 'number', value };
    return str(value);
  }

  /** The value of an expression, as `evaluate` computes it. */
  value(expr: Expr): Js {
    switch (expr.kind) {
      case 'literal':
        return this.literal(expr.value);
      case 'path':
        this.use('get');
        this.reads++;
        return call('get', name('state'), {
          type: 'array',
          items: expr.segments.map((s) => (typeof s === 'number' ? { type: 'number', value: s } : str(s))),
        });
      case 'not':
        return { type: 'not', operand: this.condition(expr.operand) };
      case 'and':
      case 'or':
        return {
          type: 'binary',
          op: expr.kind === 'and' ? '&&' : '||',
          left: this.condition(expr.left),
          right: this.condition(expr.right),
        };
      case 'compare': {
        const left = this.value(expr.left);
        const right = this.value(expr.right);
        switch (expr.op) {
          case '==':
            this.use('equals');
            return call('equals', left, right);
          case '!=':
            this.use('equals');
            return { type: 'not', operand: call('equals', left, right) };
          case 'contains':
            this.use('contains');
            return call('contains', left, right);
          default:
            this.use('compare');
            return call('compare', str(expr.op), left, right);
        }
      }
    }
  }

  /** An expression as a boolean: `truthy(…)` around values that are not booleans already. */
  condition(expr: Expr): Js {
    const value = this.value(expr);
    const boolean =
      expr.kind === 'not' ||
      expr.kind === 'and' ||
      expr.kind === 'or' ||
      expr.kind === 'compare' ||
      (expr.kind === 'literal' && typeof expr.value === 'boolean');
    if (boolean) return value;
    this.use('truthy');
    return call('truthy', value);
  }

  /** A tool argument with its templates filled, as `fillArgs` fills it. */
  argument(value: unknown): Js {
    if (typeof value === 'string') return this.template(value);
    if (Array.isArray(value)) return { type: 'array', items: value.map((v) => this.argument(v)) };
    if (typeof value === 'object' && value !== null) {
      return object(Object.entries(value).map(([k, v]) => prop(k, this.argument(v))));
    }
    if (typeof value === 'number' || typeof value === 'boolean') return this.literal(value);
    return this.literal(null);
  }

  template(source: string): Js {
    const parsed = parseTemplate(source);
    // A template that does not parse is passed on as written, as `fillArgs` does.
    if (!parsed.ok || !parsed.parts.some((p) => p.kind === 'expr')) return str(source);
    const expressions = parsed.parts.flatMap((p) => (p.kind === 'expr' ? [p] : []));
    const [single] = expressions;
    if (single && expressions.length === 1 && parsed.parts.every((p) => p.kind === 'expr' || !p.text.trim())) {
      return this.value(single.expr);
    }
    this.use('toText');
    const pieces = parsed.parts.map((p) => (p.kind === 'text' ? str(p.text) : call('toText', this.value(p.expr))));
    return pieces
      .slice(1)
      .reduce<Js>((left, right) => ({ type: 'binary', op: '+', left, right }), pieces[0] ?? str(''));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Names and comments.

const RESERVED_NAMES = [
  'Annotation',
  'BaseCheckpointSaver',
  'END',
  'LangGraphRunnableConfig',
  'START',
  'StateGraph',
  'interrupt',
  'WorkflowMessage',
  'AgentRequest',
  'ToolRequest',
  'WorkflowRuntime',
  'WorkflowState',
  'State',
  'Update',
  'RECURSION_LIMIT',
  'initialState',
  'buildWorkflow',
  'runtime',
  'state',
  'config',
  'isObject',
  'get',
  'truthy',
  'equals',
  'compare',
  'contains',
  'toText',
  'ANSWER_MAX_LENGTH',
  'humanAnswer',
  'answerOf',
  'Client',
  'SSEClientTransport',
  'StdioClientTransport',
  'StreamableHTTPClientTransport',
  'Transport',
  'McpServerConfig',
  'MCP_SERVERS',
  'MCP_CLIENT',
  'McpServerSettings',
  'McpOptions',
  'McpToolDefinition',
  'McpRuntime',
  'connectMcpServers',
  'splitToolName',
  'connectMcpServer',
  'mcpTransport',
  'mcpText',
  'closeMcpClient',
];

/** `web-search` → `webSearch`: ids are letters, digits, `_` and `-`, so the result is an identifier. */
function camelCase(id: string): string {
  const [first = 'node', ...rest] = id.split(/[-_]+/).filter(Boolean);
  const head = /^[A-Z][a-z]/.test(first) ? first[0]?.toLowerCase() + first.slice(1) : first;
  return head + rest.map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join('');
}

/** Hands out identifiers, each once: a clash with a taken name gets a number. */
class Names {
  private readonly taken = new Set(RESERVED_NAMES);

  claim(wanted: string): string {
    let candidate = wanted;
    for (let n = 2; this.taken.has(candidate); n++) candidate = `${wanted}${n}`;
    this.taken.add(candidate);
    return candidate;
  }
}

/** Text from the workflow made safe inside a block comment: no comment end, no invisible or line-breaking characters. */
function commentText(text: string): string {
  return text
    .replace(/\r\n?|[\u2028\u2029\u0085]/g, '\n')
    .replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Cn}]/gu, (c) => (c === '\n' ? c : unicodeEscape(c)))
    .replaceAll('*/', '*\\/');
}

/** Text on one line: every run of white space (line breaks included) becomes one space. */
const oneLine = (text: string): string => text.replace(/[\s\u0085]+/g, ' ').trim();

/** Greedy word wrap that keeps each line's leading indentation; a long word stays whole. */
function wrap(text: string, width: number): string[] {
  return text.split('\n').flatMap((source) => {
    const lead = /^\s*/.exec(source)?.[0] ?? '';
    const words = source.trim().split(/\s+/).filter(Boolean);
    if (words.length === 0) return [''];
    const lines: string[] = [];
    let current = lead;
    for (const word of words) {
      if (current.trim() && textWidth(current) + 1 + textWidth(word) > width) {
        lines.push(current);
        current = lead + word;
      } else {
        current = current.trim() ? `${current} ${word}` : lead + word;
      }
    }
    lines.push(current);
    return lines;
  });
}

/** A JSDoc block from paragraphs (each already wrapped into lines); blank strings separate paragraphs. */
function docComment(lines: string[]): string {
  const [only] = lines;
  if (lines.length === 1 && only !== undefined && textWidth(only) + 7 <= WIDTH) return `/** ${only} */`;
  const body = lines.map((l) => (l ? ` * ${l}` : ' *'));
  return ['/**', ...body, ' */'].join('\n');
}

const title = (n: WorkflowNode, kind: string): string => {
  const label = oneLine(n.data.label ?? '');
  return label && label !== n.id ? `${kind} "${commentText(label)}" (\`${n.id}\`)` : `${kind} \`${n.id}\``;
};

const COMMENT_WIDTH = WIDTH - 3;

function quoteBlock(text: string): string[] {
  return wrap(commentText(text), COMMENT_WIDTH - 4).map((l) => (l ? `    ${l}` : ''));
}

/** A connected tool: its server, and its name there. */
interface ConnectedTool {
  server: McpServerPlan;
  upstream: string;
}

function nodeComment(n: WorkflowNode, connected: ReadonlyMap<string, ConnectedTool>): string {
  switch (n.type) {
    case 'start':
      return docComment(wrap(`${title(n, 'Start')}: where every run begins.`, COMMENT_WIDTH));
    case 'end':
      return docComment(wrap(`${title(n, 'End')}: the run ends here.`, COMMENT_WIDTH));
    case 'router':
      return docComment(
        wrap(`${title(n, 'Router')}: records its step; its routing function picks the way on.`, COMMENT_WIDTH),
      );
    case 'agent':
      return docComment(agentComment(n));
    case 'tool':
      return docComment(toolComment(n, connected.get(n.data.tool ?? '')));
    case 'human':
      return docComment(humanComment(n));
  }
}

function agentComment(n: AgentNode): string[] {
  const prompt = systemPromptOf(n);
  const tools = n.data.tools ?? [];
  return [
    ...wrap(
      `${title(n, 'Agent')}: the model answers the transcript; the answer is stored as \`${n.id}\` and \`output\`.`,
      COMMENT_WIDTH,
    ),
    '',
    ...(prompt.trim() ? ['System prompt:', '', ...quoteBlock(prompt)] : ['No system prompt.']),
    '',
    ...wrap(
      commentText(
        `Tools: ${tools.length > 0 ? tools.join(', ') : 'none'}.` +
          (n.data.model ? ` Model: ${n.data.model}.` : ' Model: the runtime default.'),
      ),
      COMMENT_WIDTH,
    ),
  ];
}

function toolComment(n: ToolNode, connected: ConnectedTool | undefined): string[] {
  const tool = n.data.tool ?? '';
  const where = connected
    ? ` (the tool \`${connected.upstream}\` of the MCP server "${oneLine(connected.server.name)}", through ` +
      '`connectMcpServers`)'
    : '';
  return wrap(
    commentText(
      `${title(n, 'Tool')}: calls ${tool}${where} with its arguments filled from the run state; the result ` +
        `is stored as \`${n.id}\` and \`output\`.`,
    ),
    COMMENT_WIDTH,
  );
}

function humanComment(n: HumanNode): string[] {
  return [
    ...wrap(
      `${title(n, 'Human')}: pauses the run until someone answers; the answer is stored as \`${n.id}\`.`,
      COMMENT_WIDTH,
    ),
    '',
    'Question:',
    '',
    ...quoteBlock(questionOf(n)),
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// The module.

const HELPER_SOURCE: Record<Helper, string> = {
  isObject: `function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}`,
  get: `/**
 * Reads a value as conditions and templates see the state: node results from
 * \`vars\`, with \`input\`, \`messages\` and \`output\`. Objects are followed by own
 * key, arrays by index; anything missing reads as null.
 */
function get(state: State, path: (string | number)[]): unknown {
  let value: unknown = {
    ...state.vars,
    input: state.input,
    messages: state.messages,
    output: state.vars["output"] ?? null,
  };
  for (const key of path) {
    if (typeof key === "number") {
      if (!Array.isArray(value) || key >= value.length) return null;
      value = value[key];
    } else {
      if (!isObject(value) || !Object.hasOwn(value, key)) return null;
      value = value[key];
    }
  }
  return value ?? null;
}`,
  truthy: `/** Python's truthiness: null, false, 0, "", [] and {} are false. */
function truthy(value: unknown): boolean {
  if (value === null || value === undefined) return false;
  if (typeof value === "boolean") return value;
  if (typeof value === "string") return value !== "";
  if (typeof value === "number") return value !== 0 && !Number.isNaN(value);
  if (Array.isArray(value)) return value.length > 0;
  if (isObject(value)) return Object.keys(value).length > 0;
  return true;
}`,
  equals: `/** Deep equality of JSON values, without coercion: 1 == "1" is false. */
function equals(a: unknown, b: unknown): boolean {
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
  if (isObject(left) || isObject(right)) {
    if (!isObject(left) || !isObject(right)) return false;
    const keys = Object.keys(left).filter((k) => left[k] !== undefined);
    const others = Object.keys(right).filter((k) => right[k] !== undefined);
    return (
      keys.length === others.length &&
      keys.every((k) => Object.hasOwn(right, k) && equals(left[k], right[k]))
    );
  }
  return left === right;
}`,
  compare: `/** Orders two numbers or two strings; any other pair is not ordered: false. */
function compare(op: "<" | "<=" | ">" | ">=", a: unknown, b: unknown): boolean {
  const ordered =
    (typeof a === "number" && typeof b === "number") ||
    (typeof a === "string" && typeof b === "string");
  if (!ordered) return false;
  const [x, y] = [a, b] as [number | string, number | string];
  switch (op) {
    case "<":
      return x < y;
    case "<=":
      return x <= y;
    case ">":
      return x > y;
    case ">=":
      return x >= y;
  }
}`,
  contains: `/** Substring of a string, element of an array, or own key of an object. */
function contains(a: unknown, b: unknown): boolean {
  if (typeof a === "string") return typeof b === "string" && a.includes(b);
  if (Array.isArray(a)) return a.some((item) => equals(item, b));
  if (isObject(a)) return typeof b === "string" && Object.hasOwn(a, b);
  return false;
}`,
  toText: `/** A value inside text: null as nothing, scalars as themselves, others as JSON. */
function toText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") {
    return String(value);
  }
  return JSON.stringify(value) ?? "";
}`,
  answerOf: `/**
 * The answer a resume value carries: a wrapped answer (\`humanAnswer\`) or text
 * as it is, anything else as text. It never throws: LangGraph keeps the resume
 * value a node failed on, so that node would fail again on every resume.
 */
function answerOf(resume: unknown): string {
  if (isObject(resume) && typeof resume.answer === "string") {
    return resume.answer;
  }
  return toText(resume);
}`,
};

const HELPER_ORDER: Helper[] = ['isObject', 'get', 'truthy', 'equals', 'compare', 'contains', 'toText', 'answerOf'];

/** What answers a human node, as the service takes it (`HumanAnswer`): emitted when the workflow has one. */
const HUMAN_ANSWERS = `/** The longest answer a human node takes, in characters (code points). */
export const ANSWER_MAX_LENGTH = ${HUMAN_ANSWER_MAX_LENGTH};

/**
 * The resume value that answers a human node: any text of at most
 * \`ANSWER_MAX_LENGTH\` characters, the empty text included, as the service takes
 * it; anything else throws here, before the run changes. The answer is wrapped
 * because LangGraph.js 1.4 takes an empty resume value as no input at all.
 */
export function humanAnswer(text: string): { answer: string } {
  if (typeof text !== "string") throw new TypeError("An answer is text");
  if ([...text].length > ANSWER_MAX_LENGTH) {
    throw new RangeError(\`Answers are at most \${ANSWER_MAX_LENGTH} characters\`);
  }
  return { answer: text };
}`;

const DECLARATIONS = `/** A message of the run's transcript. \`node\` names the node that added it. */
export interface WorkflowMessage {
  role: "user" | "assistant";
  content: string;
  node?: string;
}

/** What an agent node asks the model. */
export interface AgentRequest {
  /** The agent node's id. */
  node: string;
  /** The model the node names, if any; otherwise the runtime picks one. */
  model?: string;
  systemPrompt: string;
  /** The tools the model may call while it answers. */
  tools: string[];
  messages: WorkflowMessage[];
}

/** What a tool node asks for. */
export interface ToolRequest {
  /** The tool node's id. */
  node: string;
  tool: string;
  /** The node's arguments, their templates filled from the run state. */
  args: Record<string, unknown>;
}

/**
 * What the workflow needs from outside, for you to implement: a model for agent
 * nodes and tools for tool nodes. Human nodes need nothing: they pause the run.
 */
export interface WorkflowRuntime {
  /** Answers the transcript as the agent node: the answer's text. */
  agent(
    request: AgentRequest,
    config: LangGraphRunnableConfig,
  ): Promise<string>;
  /** Calls the tool: its result as text. Throwing fails the run. */
  callTool(
    request: ToolRequest,
    config: LangGraphRunnableConfig,
  ): Promise<string>;
}

/**
 * The run state: the input, the transcript, each node's result under its id
 * (with the last agent or tool result as \`output\`), and the nodes that ran.
 */
export const WorkflowState = Annotation.Root({
  input: Annotation<string>(),
  messages: Annotation<WorkflowMessage[]>({
    reducer: (a, b) => a.concat(b),
    default: () => [],
  }),
  vars: Annotation<Record<string, unknown>>({
    reducer: (a, b) => ({ ...a, ...b }),
    default: () => ({}),
  }),
  path: Annotation<string[]>({
    reducer: (a, b) => a.concat(b),
    default: () => [],
  }),
});`;

/** The MCP SDK's client and transports, imported when the workflow calls tools of connected servers. */
const MCP_IMPORTS = [
  'import { Client } from "@modelcontextprotocol/sdk/client/index.js";',
  'import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";',
  'import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";',
  'import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";',
  'import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";',
].join('\n');

const MCP_SERVER_CONFIG = `/** What the module knows of a connected MCP server. */
export interface McpServerConfig {
  name: string;
  transport: "streamable_http" | "sse" | "stdio";
  /** Where it was served when the module was generated; null over stdio. */
  url: string | null;
  /** The environment variable whose URL, when set, is used instead. */
  urlEnv: string;
  /** The environment variable holding its bearer token, if it needs one. */
  tokenEnv: string;
  /** Over stdio: the environment variable holding the command that starts it. */
  commandEnv: string;
  /** Its tools the workflow uses: their names here, and on the server. */
  tools: Record<string, string>;
}`;

/**
 * The runtime around the developer's that calls connected tools through the MCP SDK: one client per server,
 * connected on first use and reused, its URL and bearer token from parameters or environment variables.
 */
const MCP_RUNTIME = `/** A server's settings given in code, before its environment variables. */
export interface McpServerSettings {
  url?: string;
  /** Sent as \`Authorization: Bearer <token>\`. */
  token?: string;
  /** Over stdio: the program and its arguments, separated by white space. */
  command?: string;
}

export interface McpOptions {
  /** Settings by server slug. */
  servers?: Record<string, McpServerSettings>;
  /** Where the variables are read: \`process.env\` unless given. */
  env?: Record<string, string | undefined>;
}

/** A connected tool as a model is offered it. */
export interface McpToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** A runtime that also calls the tools of the connected MCP servers. */
export interface McpRuntime extends WorkflowRuntime {
  /** The connected tools among \`names\` (an agent node's), for its model. */
  listTools(names: string[]): Promise<McpToolDefinition[]>;
  /** Disconnects from the servers. */
  close(): Promise<void>;
}

/**
 * \`runtime\`, with the tools of the connected MCP servers: \`callTool\` calls a
 * tool named \`<slug>__<tool>\` of a server in \`MCP_SERVERS\` as \`<tool>\` on that
 * server, through one client per server (connected on first use, then reused),
 * and leaves every other tool, and the agents, to \`runtime\`. A server's URL,
 * token and command come from \`options.servers\`, else from its environment
 * variables; its URL last from \`MCP_SERVERS\`.
 */
export function connectMcpServers(
  runtime: WorkflowRuntime,
  options: McpOptions = {},
): McpRuntime {
  const env = options.env ?? process.env;
  const clients = new Map<string, Promise<Client>>();
  const clientOf = (slug: string, server: McpServerConfig): Promise<Client> => {
    let client = clients.get(slug);
    if (!client) {
      const settings = options.servers?.[slug] ?? {};
      client = connectMcpServer(server, () =>
        mcpTransport(server, settings, env),
      );
      clients.set(slug, client);
      // A server that could not be reached is tried again on the next call.
      client.catch(() => clients.delete(slug));
    }
    return client;
  };
  return {
    agent: (request, config) => runtime.agent(request, config),
    async callTool(request, config) {
      const [slug, tool] = splitToolName(request.tool);
      const server = MCP_SERVERS[slug];
      if (!server) return runtime.callTool(request, config);
      const client = await clientOf(slug, server);
      const result = await client.callTool(
        { name: server.tools[request.tool] ?? tool, arguments: request.args },
        undefined,
        config.signal ? { signal: config.signal } : {},
      );
      const text = mcpText(result.content);
      if (result.isError) {
        throw new Error(
          \`The tool \${request.tool} failed in node \${request.node}: \${text}\`,
        );
      }
      return text;
    },
    async listTools(names) {
      const tools: McpToolDefinition[] = [];
      const wanted = new Set(names);
      for (const slug of new Set(names.map((n) => splitToolName(n)[0]))) {
        const server = MCP_SERVERS[slug];
        if (!server) continue;
        const client = await clientOf(slug, server);
        // Names on the server → names here (which may be shortened or safe).
        const named = new Map<string, string>();
        for (const [name, upstream] of Object.entries(server.tools)) {
          named.set(upstream, name);
        }
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : {});
          for (const tool of page.tools) {
            const name = named.get(tool.name) ?? \`\${slug}__\${tool.name}\`;
            if (!wanted.has(name)) continue;
            tools.push({
              name,
              description: tool.description ?? "",
              inputSchema: tool.inputSchema,
            });
          }
          cursor = page.nextCursor;
        } while (cursor);
      }
      return tools;
    },
    async close() {
      const open = [...clients.values()];
      clients.clear();
      await Promise.allSettled(open.map(async (c) => closeMcpClient(await c)));
    },
  };
}

/** \`files__read_file\` → \`["files", "read_file"]\`; no \`__\` → \`["", name]\`. */
function splitToolName(name: string): [slug: string, tool: string] {
  const at = name.indexOf("__");
  return at > 0 ? [name.slice(0, at), name.slice(at + 2)] : ["", name];
}

async function connectMcpServer(
  server: McpServerConfig,
  transport: () => Transport,
): Promise<Client> {
  // Settings that are missing fail here, before any connection is tried.
  const connection = transport();
  const client = new Client(MCP_CLIENT);
  try {
    await client.connect(connection);
  } catch (error) {
    throw new Error(\`Could not connect to the MCP server \${server.name}\`, {
      cause: error,
    });
  }
  return client;
}

/** Ends the client's session (over streamable HTTP, the server forgets it). */
async function closeMcpClient(client: Client): Promise<void> {
  const transport = client.transport;
  if (transport instanceof StreamableHTTPClientTransport) {
    await transport.terminateSession().catch(() => undefined);
  }
  await client.close();
}

/**
 * How to reach a server: at its URL, with its bearer token (streamable HTTP or
 * SSE), or by running its command (stdio).
 */
function mcpTransport(
  server: McpServerConfig,
  settings: McpServerSettings,
  env: Record<string, string | undefined>,
): Transport {
  if (server.transport === "stdio") {
    // The operator configures the command: none is written here.
    const command = settings.command ?? env[server.commandEnv] ?? "";
    const [program, ...args] = command.split(/\\s+/).filter(Boolean);
    if (!program) {
      throw new Error(
        \`\${server.name} runs over stdio: set \${server.commandEnv} to the command that starts it\`,
      );
    }
    return new StdioClientTransport({ command: program, args });
  }
  const url = settings.url ?? (env[server.urlEnv] || server.url);
  if (!url) {
    throw new Error(\`Set \${server.urlEnv} to the URL of \${server.name}\`);
  }
  const token = settings.token ?? env[server.tokenEnv];
  const requestInit = token
    ? { headers: { Authorization: \`Bearer \${token}\` } }
    : {};
  return server.transport === "sse"
    ? new SSEClientTransport(new URL(url), { requestInit })
    : new StreamableHTTPClientTransport(new URL(url), { requestInit });
}

/** A tool result's text parts, one a line (as the service reads a result). */
function mcpText(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content
    .flatMap((part: unknown) =>
      typeof part === "object" &&
      part !== null &&
      "type" in part &&
      part.type === "text" &&
      "text" in part &&
      typeof part.text === "string"
        ? [part.text]
        : [],
    )
    .join("\\n");
}`;

const INITIAL_STATE = `/** Steps a run may take; loops through routers are allowed, endless ones stop. */
export const RECURSION_LIMIT = 100;

/** The state a run starts from: the input is also the first message. */
export function initialState(
  input: string,
  vars: Record<string, unknown> = {},
): Update {
  return {
    input,
    messages: [{ role: "user", content: input }],
    vars,
    path: [],
  };
}`;

interface NodeCode {
  node: WorkflowNode;
  fn: string;
  /** Whether the function takes the runtime (agent and tool nodes). */
  usesRuntime: boolean;
}

/** Module name → `research-flow`: lower case, words joined by `-`. */
export function kebabName(name: string): string {
  const words = name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  return words.length > 0 ? words.join('-') : 'workflow';
}

/**
 * The workflow as a TypeScript module: the run state, one function per node, one routing function per router,
 * `buildWorkflow(runtime, { checkpointer })` (the compiled graph), `initialState` and `RECURSION_LIMIT`.
 * Throws `WorkflowCompileError` for a workflow `compileWorkflow` would refuse.
 */
export function generateTypeScript(
  workflow: Workflow,
  options: { name?: string; tools?: readonly CodegenTool[] } = {},
): string {
  const plan = planWorkflow(workflow);
  const moduleName = kebabName(options.name ?? workflow.name);
  const servers = planMcpServers(workflow, options.tools);
  const connected = new Map(
    servers.flatMap((server) => server.tools.map((tool) => [tool.name, { server, upstream: tool.upstream }] as const)),
  );
  const emitter = new Emitter();
  const names = new Names();
  const nodes: NodeCode[] = plan.nodes.map((node) => ({
    node,
    fn: names.claim(`${camelCase(node.id)}Node`),
    usesRuntime: node.type === 'agent' || node.type === 'tool',
  }));
  const routeNames = new Map(
    [...plan.routers.keys()].map((id) => [id, names.claim(`route${upperFirst(camelCase(id))}`)]),
  );

  const routeSources = new Map(
    [...plan.routers].map(([id, router]) => {
      const fn = routeNames.get(id) ?? '';
      const node = plan.nodes.find((n) => n.id === id);
      const comment = docComment(
        wrap(
          `Where ${node ? title(node, 'router') : id} goes: the first branch whose condition holds, else its default.`,
          COMMENT_WIDTH,
        ),
      );
      const reads = emitter.reads;
      const statements: Doc[] = router.branches.map((b) => [
        `// ${commentText(b.condition).replace(/\n/g, ' ')}`,
        hardline,
        printIfReturn(emitter.condition(b.expr), str(b.target)),
      ]);
      statements.push(printReturn(str(router.fallback)));
      const signature = `function ${fn}(${emitter.reads > reads ? 'state' : '_state'}: State): string {`;
      return [
        id,
        `${comment}\n${printDoc([signature, indent([hardline, join(hardline, statements)]), hardline, '}'])}`,
      ];
    }),
  );
  // Each routing function follows its router's node function.
  const nodeSources = nodes.map((c) =>
    [`${nodeComment(c.node, connected)}\n${printDoc(nodeFunction(c, emitter))}`, routeSources.get(c.node.id) ?? '']
      .filter(Boolean)
      .join('\n\n'),
  );

  const usesState = nodes.some((c) => c.usesRuntime) || plan.routers.size > 0;
  const hasHuman = nodes.some((c) => c.node.type === 'human');
  const hasEnd = nodes.some((c) => c.node.type === 'end');
  const usesRuntime = nodes.some((c) => c.usesRuntime);
  const imports = [
    'Annotation',
    'type BaseCheckpointSaver',
    ...(hasEnd ? ['END'] : []),
    'type LangGraphRunnableConfig',
    'START',
    'StateGraph',
    ...(hasHuman ? ['interrupt'] : []),
  ];

  const sections = [
    header(workflow, moduleName, plan, hasHuman, servers),
    printDoc([
      'import ',
      group(['{', indent([line, join([',', line], imports)]), ifBreak(','), line, '}']),
      ' from "@langchain/langgraph";',
    ]) + (servers.length > 0 ? `\n${MCP_IMPORTS}` : ''),
    DECLARATIONS,
    [usesState ? 'type State = typeof WorkflowState.State;' : '', 'type Update = typeof WorkflowState.Update;']
      .filter(Boolean)
      .join('\n'),
    INITIAL_STATE,
    ...(hasHuman ? [HUMAN_ANSWERS] : []),
    ...HELPER_ORDER.filter((h) => emitter.helpers.has(h)).map((h) => HELPER_SOURCE[h]),
    ...nodeSources,
    buildFunction(plan, nodes, routeNames, usesRuntime),
    ...(servers.length > 0 ? mcpSections(servers, moduleName) : []),
  ];
  return `${sections.join('\n\n')}\n`;
}

const upperFirst = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

function header(
  workflow: Workflow,
  moduleName: string,
  plan: WorkflowPlan,
  hasHuman: boolean,
  servers: McpServerPlan[],
): string {
  const description = workflow.description.trim();
  const mcp = servers.length > 0;
  const lines = [
    ...wrap(
      commentText(`${moduleName}: the workflow "${oneLine(workflow.name)}" as a LangGraph graph.`),
      COMMENT_WIDTH,
    ),
    '',
    ...wrap(
      'Generated by the workflow builder of Agent Service. It takes the same steps as the service does when it ' +
        `runs the workflow: ${plan.nodes.length} nodes, each one function below, and a routing function per ` +
        `router. It needs \`@langchain/langgraph\` (${LANGGRAPH_JS_RANGE}) and \`@langchain/core\`` +
        (mcp ? `, and \`@modelcontextprotocol/sdk\` (${MCP_SDK_JS_RANGE}) for its connected tools.` : ' only.'),
      COMMENT_WIDTH,
    ),
    ...(description ? ['', ...wrap(commentText(description), COMMENT_WIDTH)] : []),
    ...(mcp ? ['', ...mcpHeader(servers)] : []),
    '',
    'Run it with your implementation of `WorkflowRuntime`:',
    '',
    '    import { Command, MemorySaver } from "@langchain/langgraph";',
    `    import { buildWorkflow, ${mcp ? 'connectMcpServers, ' : ''}${hasHuman ? 'humanAnswer, ' : ''}initialState } from "./${moduleName}.js";`,
    '',
    ...(mcp ? ['    const runtime = connectMcpServers(yourRuntime);'] : []),
    '    const graph = buildWorkflow(runtime, { checkpointer: new MemorySaver() });',
    '    const config = { configurable: { thread_id: "run-1" } };',
    '    let state = await graph.invoke(initialState("Hello"), config);',
    ...(hasHuman
      ? [
          '    // A human node pauses the run: its question is in',
          '    // (await graph.getState(config)).tasks[0].interrupts[0].value.',
          '    // Any text answers it, the empty text too.',
          '    state = await graph.invoke(new Command({ resume: humanAnswer("yes") }), config);',
        ]
      : []),
    '    console.log(state.vars.output, state.path);',
    ...(mcp ? ['    await runtime.close();'] : []),
  ];
  return docComment(lines);
}

/** The header's paragraph on connected tools: how each server is reached, and where its credential comes from. */
function mcpHeader(servers: McpServerPlan[]): string[] {
  return [
    ...wrap(
      'Tools named `<slug>__<tool>` come from MCP servers that Agent Service was connected to. ' +
        '`connectMcpServers(runtime)` calls them through the MCP SDK and leaves every other tool to your runtime. ' +
        'No credential is written here: each server is reached with these environment variables (or ' +
        '`connectMcpServers` options):',
      COMMENT_WIDTH,
    ),
    '',
    ...servers.flatMap((server) =>
      wrap(commentText(`- ${serverSummary(server)}`), COMMENT_WIDTH).map((l, i) => (i === 0 ? l : `  ${l}`)),
    ),
  ];
}

/** The connected servers' table, the client's name, and the runtime that calls their tools. */
function mcpSections(servers: McpServerPlan[], moduleName: string): string[] {
  const table = object(
    servers.map((server) =>
      prop(
        server.slug,
        object(
          [
            prop('name', str(server.name)),
            prop('transport', str(server.transport)),
            prop('url', server.url === null ? { type: 'keyword', text: 'null' } : str(server.url)),
            prop('urlEnv', str(server.urlEnv)),
            prop('tokenEnv', str(server.tokenEnv)),
            prop('commandEnv', str(server.commandEnv)),
            prop('tools', object(server.tools.map((t) => prop(t.name, str(t.upstream))))),
          ],
          true,
        ),
      ),
    ),
    true,
  );
  const tableComment = docComment([
    ...wrap(
      "The MCP servers of the workflow's connected tools, by slug. No credential is written here: a server's " +
        'bearer token is read from its `tokenEnv` variable, its URL from `urlEnv` (else `url`), and a stdio ' +
        "server's command from `commandEnv`.",
      COMMENT_WIDTH,
    ),
  ]);
  const client = printConst('MCP_CLIENT', object([prop('name', str(moduleName)), prop('version', str('1.0.0'))]));
  return [
    MCP_SERVER_CONFIG,
    `${tableComment}\n${printDoc(['export const MCP_SERVERS: Record<string, McpServerConfig> = ', printJs(table), ';'])}`,
    `/** How this module names itself to the servers. */\n${printDoc(client)}`,
    MCP_RUNTIME,
  ];
}

/** What a node returns: the message it adds (if any), its results in `vars`, and its step in `path`. */
function update(id: string, message: [role: string, content: Js] | undefined, vars: Property[]): Js {
  const [role, content] = message ?? [];
  return object(
    [
      ...(role && content
        ? [
            prop('messages', {
              type: 'array',
              items: [object([prop('role', str(role)), prop('content', content), prop('node', str(id))])],
            }),
          ]
        : []),
      ...(vars.length > 0 ? [prop('vars', object(vars))] : []),
      prop('path', { type: 'array', items: [str(id)] }),
    ],
    message !== undefined,
  );
}

function nodeFunction(c: NodeCode, emitter: Emitter): Doc {
  const { node: n, fn } = c;
  const reads = emitter.reads;
  const body: Doc[] = [];
  const signature = c.usesRuntime ? `async function ${fn}(` : `function ${fn}(): Update {`;
  switch (n.type) {
    case 'agent': {
      const request = object(
        [
          prop('node', str(n.id)),
          ...(n.data.model !== undefined ? [prop('model', str(n.data.model))] : []),
          prop('systemPrompt', str(systemPromptOf(n))),
          prop('tools', { type: 'array', items: (n.data.tools ?? []).map(str) }),
          prop('messages', name('state.messages')),
        ],
        true,
      );
      body.push(printConst('text', { type: 'await', operand: call('runtime.agent', request, name('config')) }));
      body.push(
        printReturn(
          update(n.id, ['assistant', name('text')], [prop(n.id, name('text')), prop('output', name('text'))]),
        ),
      );
      break;
    }
    case 'tool': {
      const tool = n.data.tool ?? '';
      body.push(printConst('args', emitter.argument(n.data.args ?? {})));
      const request = object([
        prop('node', str(n.id)),
        prop('tool', str(tool)),
        { key: 'args', shorthand: true, value: name('args') },
      ]);
      body.push(printConst('text', { type: 'await', operand: call('runtime.callTool', request, name('config')) }));
      const content: Js = { type: 'binary', op: '+', left: str(`Result of ${tool}: `), right: name('text') };
      body.push(printReturn(update(n.id, ['user', content], [prop(n.id, name('text')), prop('output', name('text'))])));
      break;
    }
    case 'human': {
      emitter.use('answerOf');
      const question = object([prop('node', str(n.id)), prop('question', str(questionOf(n)))]);
      body.push('// On resume, LangGraph runs this node again and `interrupt` returns the answer.');
      body.push(printConst('answer', call('answerOf', call('interrupt', question))));
      body.push(printReturn(update(n.id, ['user', name('answer')], [prop(n.id, name('answer'))])));
      break;
    }
    default:
      body.push(printReturn(update(n.id, undefined, [])));
  }
  const head: Doc = c.usesRuntime
    ? group([
        signature,
        indent([
          softline,
          join(
            [',', line],
            [
              'runtime: WorkflowRuntime',
              // Tool arguments without templates leave the state unread.
              `${n.type === 'tool' && emitter.reads === reads ? '_state' : 'state'}: State`,
              'config: LangGraphRunnableConfig',
            ],
          ),
        ]),
        ifBreak(','),
        softline,
        '): Promise<Update> {',
      ])
    : signature;
  return [head, indent([hardline, join(hardline, body)]), hardline, '}'];
}

function buildFunction(
  plan: WorkflowPlan,
  nodes: NodeCode[],
  routeNames: Map<string, string>,
  usesRuntime: boolean,
): string {
  // One `addNode` with every node: chaining one call per node makes TypeScript's inference of the node names
  // recurse once per node, too deep for large workflows.
  const nodeMap = object(
    nodes.map((c) =>
      prop(
        c.node.id,
        c.usesRuntime
          ? {
              type: 'arrow',
              params: ['state', 'config'],
              body: call(c.fn, name('runtime'), name('state'), name('config')),
            }
          : name(c.fn),
      ),
    ),
    true,
  );
  const calls: { method: string; args: Js[] }[] = [{ method: 'addNode', args: [nodeMap] }];
  calls.push({ method: 'addEdge', args: [name('START'), str(plan.start)] });
  for (const [source, target] of plan.edges) calls.push({ method: 'addEdge', args: [str(source), str(target)] });
  for (const [id, router] of plan.routers) {
    const targets = [...new Set([...router.branches.map((b) => b.target), router.fallback])];
    calls.push({
      method: 'addConditionalEdges',
      args: [str(id), name(routeNames.get(id) ?? ''), { type: 'array', items: targets.map(str) }],
    });
  }
  for (const c of nodes)
    if (c.node.type === 'end') calls.push({ method: 'addEdge', args: [str(c.node.id), name('END')] });
  calls.push({ method: 'compile', args: [object([prop('checkpointer', name('options.checkpointer'))])] });
  calls.push({ method: 'withConfig', args: [object([prop('recursionLimit', name('RECURSION_LIMIT'))])] });

  const comment = docComment([
    'The workflow as a compiled LangGraph graph. Human nodes need a checkpointer:',
    'a paused run is resumed from it.',
  ]);
  const signature = group([
    'export function buildWorkflow(',
    indent([
      softline,
      `${usesRuntime ? 'runtime' : '_runtime'}: WorkflowRuntime,`,
      line,
      'options: { checkpointer?: BaseCheckpointSaver } = {}',
    ]),
    ifBreak(','),
    softline,
    ') {',
  ]);
  const statement = ['return ', printChain('new StateGraph(WorkflowState)', calls), ';'];
  return `${comment}\n${printDoc([signature, indent([hardline, statement]), hardline, '}'])}`;
}
