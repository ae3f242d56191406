import { type RouterPlan, type WorkflowPlan, planWorkflow } from '../plan.js';
import { type Expr, type Literal, parseTemplate } from '../expression.js';
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
import { LANGGRAPH_PYTHON_REQUIREMENT, MCP_PYTHON_REQUIREMENT } from './versions.js';

/**
 * Python source for a workflow: the graph `compileWorkflow` builds, written out as a module for LangGraph's Python
 * library, with synchronous node functions. Conditions and templates become Python expressions over a few helpers
 * that restate the expression language's semantics (JSON values, no coercion), so the module stands alone.
 *
 * The layout follows PEP 8 as Black writes it: 4-space indents, lines within 79 columns where the text allows,
 * brackets that do not fit exploded one item per line with a trailing comma, long strings split into adjacent
 * literals inside parentheses.
 */

const WIDTH = 79;
const STEP = '    ';

// ---------------------------------------------------------------------------------------------------------------
// Literals and text.

/** Characters written as escapes: controls, format and private-use characters, separators, lone surrogates. */
const UNPRINTABLE = /[\p{C}\p{Zl}\p{Zp}]|(?! )\p{Zs}/u;

function escapeChar(c: string): string {
  const code = c.codePointAt(0) ?? 0;
  if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`;
  if (code <= 0xffff) return `\\u${code.toString(16).padStart(4, '0')}`;
  return `\\U${code.toString(16).padStart(8, '0')}`;
}

/**
 * A Python string literal that stays correct whatever the text holds: quotes and backslashes escaped, every
 * invisible or line-breaking character (and a lone surrogate, which UTF-8 source cannot hold) as an escape. Double
 * quotes unless the text holds more of them than single quotes, as Black chooses.
 */
function pyStringLiteral(value: string): string {
  const doubles = value.split('"').length - 1;
  const singles = value.split("'").length - 1;
  const quote = doubles > singles ? "'" : '"';
  let out = '';
  for (const c of value) {
    if (c === quote || c === '\\') out += `\\${c}`;
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (UNPRINTABLE.test(c)) out += escapeChar(c);
    else out += c;
  }
  return quote + out + quote;
}

/** Columns a string takes: wide (CJK, emoji) characters take two. */
function textWidth(text: string): number {
  let width = 0;
  for (const c of text) {
    width += /[\p{Extended_Pictographic}\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60]/u.test(c)
      ? 2
      : 1;
  }
  return width;
}

/** Splits text into pieces whose literals fit `width`, after line breaks and spaces where possible. */
function chunks(value: string, width: number): string[] {
  const words = value.split(/(?<=[\n ])/);
  const pieces: string[] = [];
  let current = '';
  const fitsIn = (text: string) => textWidth(pyStringLiteral(text)) <= width;
  for (const word of words) {
    if (current && (!fitsIn(current + word) || current.endsWith('\n'))) {
      pieces.push(current);
      current = '';
    }
    if (fitsIn(current + word)) {
      current += word;
      continue;
    }
    // A word longer than a line is cut where the line ends.
    for (const c of word) {
      if (current && !fitsIn(current + c)) {
        pieces.push(current);
        current = '';
      }
      current += c;
    }
  }
  if (current || pieces.length === 0) pieces.push(current);
  return pieces;
}

/** Text from the workflow made safe in a comment or docstring: invisible characters written as escapes. */
function visible(text: string): string {
  return text
    .replace(/\r\n?|[\u2028\u2029\u0085]/g, '\n')
    .replace(new RegExp(UNPRINTABLE.source, 'gu'), (c) => (c === '\n' ? c : escapeChar(c)));
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

/**
 * A docstring at an indentation: backslashes escaped (so user text holds no escape), and every `"` that starts a
 * run of quotes or ends the text escaped, so that no `"""` closes it early.
 */
function docstring(lines: string[], indentation: string): string {
  const escaped = lines.map((l) =>
    visible(l)
      .replaceAll('\\', '\\\\')
      .replace(/"(?=")/g, '\\"'),
  );
  const last = escaped.length - 1;
  if ((escaped[last] ?? '').endsWith('"')) escaped[last] = `${escaped[last]?.slice(0, -1) ?? ''}\\"`;
  const [first = ''] = escaped;
  if (escaped.length === 1 && textWidth(indentation + first) + 6 <= WIDTH) return `${indentation}"""${first}"""`;
  const rest = escaped.slice(1).map((l) => (l ? indentation + l : ''));
  return [`${indentation}"""${first}`, ...rest, `${indentation}"""`].join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// A small Python syntax tree, laid out as Black lays it out.

type Py =
  | { type: 'atom'; text: string }
  | { type: 'string'; value: string }
  | { type: 'call'; callee: string; args: Py[] }
  | { type: 'kwarg'; name: string; value: Py }
  | { type: 'list'; items: Py[] }
  | { type: 'dict'; entries: [string, Py][] }
  | { type: 'chain'; op: 'and' | 'or' | '+'; operands: Py[] }
  | { type: 'not'; operand: Py }
  | { type: 'lambda'; params: string; body: Py };

const atom = (text: string): Py => ({ type: 'atom', text });
const str = (value: string): Py => ({ type: 'string', value });
const call = (callee: string, ...args: Py[]): Py => ({ type: 'call', callee, args });
const kwarg = (name: string, value: Py): Py => ({ type: 'kwarg', name, value });
const dict = (entries: [string, Py][]): Py => ({ type: 'dict', entries });
const list = (items: Py[]): Py => ({ type: 'list', items });

/** The expression on one line. */
function flat(e: Py, parenthesised = false): string {
  switch (e.type) {
    case 'atom':
      return e.text;
    case 'string':
      return pyStringLiteral(e.value);
    case 'call':
      return `${e.callee}(${e.args.map((a) => flat(a)).join(', ')})`;
    case 'kwarg':
      return `${e.name}=${flat(e.value)}`;
    case 'list':
      return `[${e.items.map((i) => flat(i)).join(', ')}]`;
    case 'dict':
      return `{${e.entries.map(([k, v]) => `${pyStringLiteral(k)}: ${flat(v)}`).join(', ')}}`;
    case 'chain': {
      const text = e.operands.map((o) => flat(o, nested(o, e.op))).join(` ${e.op} `);
      return parenthesised ? `(${text})` : text;
    }
    case 'not':
      return `not ${flat(e.operand, e.operand.type === 'chain')}`;
    case 'lambda':
      return `lambda ${e.params}: ${flat(e.body)}`;
  }
}

/** Whether an operand needs parentheses inside a chain of `op`. */
const nested = (o: Py, op: 'and' | 'or' | '+'): boolean => o.type === 'chain' && o.op !== op;

/**
 * The expression starting at column `start` on a line indented by `indentation`, followed by `reserve` more
 * columns: on one line when it fits, otherwise with its outermost brackets exploded (and so on inwards).
 */
function render(e: Py, indentation: string, start: number, reserve: number, parenthesised = false): string {
  const one = flat(e, parenthesised);
  if (start + textWidth(one) + reserve <= WIDTH) return one;
  const inner = indentation + STEP;
  const column = textWidth(inner);
  const exploded = (open: string, items: string[], close: string) =>
    [open, ...items.map((item) => `${inner}${item},`), `${indentation}${close}`].join('\n');
  switch (e.type) {
    case 'atom':
      return one;
    case 'string': {
      const pieces = chunks(e.value, WIDTH - column);
      if (pieces.length === 1) return one;
      return ['(', ...pieces.map((p) => inner + pyStringLiteral(p)), `${indentation})`].join('\n');
    }
    case 'call':
      return exploded(
        `${e.callee}(`,
        e.args.map((a) => render(a, inner, column, 1)),
        ')',
      );
    case 'kwarg':
      return `${e.name}=${render(e.value, indentation, start + e.name.length + 1, reserve)}`;
    case 'list':
      return exploded(
        '[',
        e.items.map((i) => render(i, inner, column, 1)),
        ']',
      );
    case 'dict':
      return exploded(
        '{',
        e.entries.map(([k, v]) => {
          const key = `${pyStringLiteral(k)}: `;
          return key + render(v, inner, column + textWidth(key), 1);
        }),
        '}',
      );
    case 'chain': {
      const lines = e.operands.map((o, i) => {
        const lead = i === 0 ? '' : `${e.op} `;
        return inner + lead + render(o, inner, column + lead.length, 0, nested(o, e.op));
      });
      return ['(', ...lines, `${indentation})`].join('\n');
    }
    case 'not':
      return `not ${render(e.operand, indentation, start + 4, reserve, e.operand.type === 'chain')}`;
    case 'lambda': {
      const lead = `lambda ${e.params}: `;
      return lead + render(e.body, indentation, start + lead.length, reserve);
    }
  }
}

/** A statement `prefix<expression>suffix` at an indentation. */
function statement(indentation: string, prefix: string, e: Py, suffix = ''): string {
  const start = textWidth(indentation + prefix);
  return `${indentation}${prefix}${render(e, indentation, start, textWidth(suffix))}${suffix}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Expressions and templates as Python.

type Helper = 'is_number' | 'get' | 'truthy' | 'equals' | 'compare' | 'contains' | 'to_text' | 'answer_of';

const HELPER_NEEDS: Record<Helper, Helper[]> = {
  is_number: [],
  get: [],
  truthy: [],
  equals: [],
  compare: ['is_number'],
  contains: ['equals'],
  to_text: [],
  answer_of: ['to_text'],
};

class Emitter {
  readonly helpers = new Set<Helper>();

  use(helper: Helper): void {
    if (this.helpers.has(helper)) return;
    this.helpers.add(helper);
    for (const need of HELPER_NEEDS[helper]) this.use(need);
  }

  literal(value: Literal): Py {
    if (value === null) return atom('None');
    if (typeof value === 'boolean') return atom(value ? 'True' : 'False');
    if (typeof value === 'number') return atom(String(value));
    return str(value);
  }

  /** The value of an expression, as `evaluate` computes it. */
  value(expr: Expr): Py {
    switch (expr.kind) {
      case 'literal':
        return this.literal(expr.value);
      case 'path':
        this.use('get');
        return call(
          'get',
          atom('state'),
          list(expr.segments.map((s) => (typeof s === 'number' ? atom(String(s)) : str(s)))),
        );
      case 'not':
        return { type: 'not', operand: this.condition(expr.operand) };
      case 'and':
      case 'or':
        return chain(expr.kind, this.condition(expr.left), this.condition(expr.right));
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

  /** An expression as a bool: `truthy(…)` around values that are not bools already. */
  condition(expr: Expr): Py {
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
  argument(value: unknown): Py {
    if (typeof value === 'string') return this.template(value);
    if (Array.isArray(value)) return list(value.map((v) => this.argument(v)));
    if (typeof value === 'object' && value !== null) {
      return dict(Object.entries(value).map(([k, v]) => [k, this.argument(v)]));
    }
    if (typeof value === 'number' || typeof value === 'boolean') return this.literal(value);
    return this.literal(null);
  }

  template(source: string): Py {
    const parsed = parseTemplate(source);
    // A template that does not parse is passed on as written, as `fillArgs` does.
    if (!parsed.ok || !parsed.parts.some((p) => p.kind === 'expr')) return str(source);
    const expressions = parsed.parts.flatMap((p) => (p.kind === 'expr' ? [p] : []));
    const [single] = expressions;
    if (single && expressions.length === 1 && parsed.parts.every((p) => p.kind === 'expr' || !p.text.trim())) {
      return this.value(single.expr);
    }
    this.use('to_text');
    return {
      type: 'chain',
      op: '+',
      operands: parsed.parts.map((p) => (p.kind === 'text' ? str(p.text) : call('to_text', this.value(p.expr)))),
    };
  }
}

/** `a and b`, flattening `(a and b) and c` into one chain. */
function chain(op: 'and' | 'or', left: Py, right: Py): Py {
  const operands = [left, right].flatMap((o) => (o.type === 'chain' && o.op === op ? o.operands : [o]));
  return { type: 'chain', op, operands };
}

// ---------------------------------------------------------------------------------------------------------------
// Names.

const RESERVED_NAMES = [
  'json',
  'operator',
  'Annotated',
  'Any',
  'NotRequired',
  'Protocol',
  'TypedDict',
  'END',
  'START',
  'StateGraph',
  'interrupt',
  'WorkflowMessage',
  'WorkflowRuntime',
  'WorkflowState',
  'RECURSION_LIMIT',
  'merge_vars',
  'initial_state',
  'build_workflow',
  'runtime',
  'state',
  'graph',
  'is_number',
  'get',
  'truthy',
  'equals',
  'compare',
  'contains',
  'to_text',
  'ANSWER_MAX_LENGTH',
  'human_answer',
  'answer_of',
  'asyncio',
  'os',
  'threading',
  'Mapping',
  'ClientSession',
  'StdioServerParameters',
  'sse_client',
  'stdio_client',
  'streamablehttp_client',
  'MCP_SERVERS',
  'McpRuntime',
];

const KEYWORDS = new Set(
  (
    'False None True and as assert async await break class continue def del elif else except finally for from ' +
    'global if import in is lambda nonlocal not or pass raise return try while with yield'
  ).split(' '),
);

/** `webSearch-v2` → `web_search_v2`: ids are letters, digits, `_` and `-`, so the result is an identifier. */
function snakeCase(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** Hands out identifiers, each once: a clash with a taken name gets a number. */
class Names {
  private readonly taken = new Set(RESERVED_NAMES);

  claim(wanted: string): string {
    let candidate = wanted;
    for (let n = 2; this.taken.has(candidate); n++) candidate = `${wanted}_${n}`;
    this.taken.add(candidate);
    return candidate;
  }
}

/** Module name → `research_flow`: an importable module name (a letter first, no keyword). */
export function moduleNameOf(name: string): string {
  const snake = snakeCase(name.normalize('NFKD').replace(/\p{M}/gu, ''));
  if (!snake) return 'workflow';
  if (/^[0-9]/.test(snake)) return `workflow_${snake}`;
  return KEYWORDS.has(snake) ? `${snake}_workflow` : snake;
}

// ---------------------------------------------------------------------------------------------------------------
// Comments.

const title = (n: WorkflowNode, kind: string): string => {
  const label = oneLine(n.data.label ?? '');
  return label && label !== n.id ? `${kind} "${label}" (\`\`${n.id}\`\`)` : `${kind} \`\`${n.id}\`\``;
};

const DOC_WIDTH = WIDTH - 4 - 3;

function quoteBlock(text: string): string[] {
  return wrap(visible(text), DOC_WIDTH - 4).map((l) => (l ? `    ${l}` : ''));
}

/** A connected tool: its server, and its name there. */
interface ConnectedTool {
  server: McpServerPlan;
  upstream: string;
}

function nodeDoc(n: WorkflowNode, connected: ReadonlyMap<string, ConnectedTool>): string[] {
  switch (n.type) {
    case 'start':
      return wrap(`${title(n, 'Start')}: where every run begins.`, DOC_WIDTH);
    case 'end':
      return wrap(`${title(n, 'End')}: the run ends here.`, DOC_WIDTH);
    case 'router':
      return wrap(`${title(n, 'Router')}: records its step; its routing function picks the way on.`, DOC_WIDTH);
    case 'agent':
      return agentDoc(n);
    case 'tool':
      return toolDoc(n, connected.get(n.data.tool ?? ''));
    case 'human':
      return humanDoc(n);
  }
}

function agentDoc(n: AgentNode): string[] {
  const prompt = systemPromptOf(n);
  const tools = n.data.tools ?? [];
  return [
    ...wrap(
      `${title(n, 'Agent')}: the model answers the transcript; the answer is stored as ` +
        `\`\`${n.id}\`\` and \`\`output\`\`.`,
      DOC_WIDTH,
    ),
    '',
    ...(prompt.trim() ? ['System prompt:', '', ...quoteBlock(prompt)] : ['No system prompt.']),
    '',
    ...wrap(
      `Tools: ${tools.length > 0 ? tools.join(', ') : 'none'}.` +
        (n.data.model ? ` Model: ${n.data.model}.` : ' Model: the runtime default.'),
      DOC_WIDTH,
    ),
  ];
}

function toolDoc(n: ToolNode, connected: ConnectedTool | undefined): string[] {
  const tool = n.data.tool ?? '';
  const where = connected
    ? ` (the tool \`\`${connected.upstream}\`\` of the MCP server "${oneLine(connected.server.name)}", ` +
      'through ``McpRuntime``)'
    : '';
  return wrap(
    `${title(n, 'Tool')}: calls ${tool}${where} with its arguments filled from the run state; the result is ` +
      `stored as \`\`${n.id}\`\` and \`\`output\`\`.`,
    DOC_WIDTH,
  );
}

function humanDoc(n: HumanNode): string[] {
  return [
    ...wrap(
      `${title(n, 'Human')}: pauses the run until someone answers; the answer is stored as \`\`${n.id}\`\`.`,
      DOC_WIDTH,
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
  is_number: `def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, but not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)`,
  get: `def get(state: WorkflowState, path: list[str | int]) -> Any:
    """Reads a value as conditions and templates see the state.

    Node results from \`\`vars\`\`, with \`\`input\`\`, \`\`messages\`\` and \`\`output\`\`.
    Dicts are followed by key, lists by index; anything missing reads as None.
    """
    value: Any = {
        **state["vars"],
        "input": state["input"],
        "messages": state["messages"],
        "output": state["vars"].get("output"),
    }
    for key in path:
        if isinstance(key, int):
            if not isinstance(value, list) or key >= len(value):
                return None
        elif not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value`,
  truthy: `def truthy(value: Any) -> bool:
    """Python's truthiness: None, False, 0, NaN, "", [] and {} are false."""
    if isinstance(value, float) and value != value:
        return False
    return bool(value)`,
  equals: `def equals(a: Any, b: Any) -> bool:
    """Deep equality of JSON values, without coercion: 1 == "1" is false."""
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(equals(x, y) for x, y in zip(a, b))
        )
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(equals(a[key], b[key]) for key in a)
        )
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b`,
  compare: `def compare(op: str, a: Any, b: Any) -> bool:
    """Orders two numbers or two strings; any other pair is not ordered: False.

    Strings compare by UTF-16 code units, as the service (JavaScript) does.
    """
    if isinstance(a, str) and isinstance(b, str):
        a = a.encode("utf-16-be", "surrogatepass")
        b = b.encode("utf-16-be", "surrogatepass")
    elif not (is_number(a) and is_number(b)):
        return False
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b`,
  contains: `def contains(a: Any, b: Any) -> bool:
    """Substring of a string, element of a list, or key of a dict."""
    if isinstance(a, str):
        return isinstance(b, str) and b in a
    if isinstance(a, list):
        return any(equals(item, b) for item in a)
    if isinstance(a, dict):
        return isinstance(b, str) and b in a
    return False`,
  to_text: `def to_text(value: Any) -> str:
    """A value in text: None as nothing, scalars as such, others as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))`,
  answer_of: `def answer_of(resume: Any) -> str:
    """The answer a resume value carries.

    A wrapped answer (\`\`human_answer\`\`) or text as it is, anything else as
    text. It never raises: a human node that raised would keep the bad value.
    """
    if isinstance(resume, dict) and isinstance(resume.get("answer"), str):
        return resume["answer"]
    return to_text(resume)`,
};

const HELPER_ORDER: Helper[] = ['is_number', 'get', 'truthy', 'equals', 'compare', 'contains', 'to_text', 'answer_of'];

/** The MCP client's imports, when the workflow calls tools of connected servers (the `mcp` package, 1.x API). */
const MCP_IMPORTS = [
  'from mcp import ClientSession, StdioServerParameters',
  'from mcp.client.sse import sse_client',
  'from mcp.client.stdio import stdio_client',
  'from mcp.client.streamable_http import streamablehttp_client',
];

/**
 * The runtime around the developer's that calls connected tools through the `mcp` client: one session per server,
 * opened on first use and reused, held on an event loop in a background thread (the node functions are synchronous).
 */
const MCP_RUNTIME = `class McpRuntime:
    """A runtime that also calls the tools of the connected MCP servers.

    \`\`call_tool\`\` calls a tool named \`\`<slug>__<tool>\`\` of a server in
    \`\`MCP_SERVERS\`\` as \`\`<tool>\`\` on that server, through one session per
    server (opened on first use, then reused), and leaves every other tool,
    and the agents, to \`\`runtime\`\`. \`\`servers\`\` gives settings by slug
    (\`\`url\`\`, \`\`token\`\`, \`\`command\`\`) before the environment variables, read
    from \`\`env\`\` (\`\`os.environ\`\` unless given). The sessions live on an event
    loop of their own, in a background thread, until \`\`close()\`\` (or the end
    of a \`\`with\`\` block).
    """

    def __init__(
        self,
        runtime: WorkflowRuntime,
        servers: Mapping[str, Mapping[str, str]] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.runtime = runtime
        self._settings = servers or {}
        self._env = os.environ if env is None else env
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sessions: dict[str, asyncio.Future[ClientSession]] = {}
        self._holders: list[asyncio.Task[None]] = []
        self._closing: asyncio.Event | None = None

    def __enter__(self) -> "McpRuntime":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def agent(self, **request: Any) -> str:
        return self.runtime.agent(**request)

    def call_tool(self, *, node: str, tool: str, args: dict[str, Any]) -> str:
        slug, _, name = tool.partition("__")
        if not name or slug not in MCP_SERVERS:
            return self.runtime.call_tool(node=node, tool=tool, args=args)
        name = MCP_SERVERS[slug]["tools"].get(tool, name)
        result = self._run(self._call_tool(slug, name, args))
        text = "\\n".join(
            part.text for part in result.content if part.type == "text"
        )
        if result.isError:
            raise RuntimeError(
                f"the tool {tool} failed in node {node}: {text}"
            )
        return text

    def list_tools(self, names: list[str]) -> list[dict[str, Any]]:
        """The connected tools among \`\`names\`\`, for an agent's model."""
        return self._run(self._list_tools(names))

    def close(self) -> None:
        """Closes the sessions and stops their event loop."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._close(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def _run(self, coroutine: Any) -> Any:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, daemon=True
                )
                self._thread.start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    async def _call_tool(
        self, slug: str, name: str, args: dict[str, Any]
    ) -> Any:
        session = await self._session(slug)
        return await session.call_tool(name, args)

    async def _list_tools(self, names: list[str]) -> list[dict[str, Any]]:
        tools = []
        for slug in dict.fromkeys(name.partition("__")[0] for name in names):
            if slug not in MCP_SERVERS:
                continue
            session = await self._session(slug)
            # Names on the server -> names here (which may be shortened).
            used = MCP_SERVERS[slug]["tools"]
            named = {upstream: here for here, upstream in used.items()}
            cursor = None
            while True:
                page = await session.list_tools(cursor)
                for tool in page.tools:
                    name = named.get(tool.name, f"{slug}__{tool.name}")
                    if name in names:
                        tools.append(
                            {
                                "name": name,
                                "description": tool.description or "",
                                "input_schema": tool.inputSchema,
                            }
                        )
                cursor = page.nextCursor
                if not cursor:
                    break
        return tools

    async def _session(self, slug: str) -> ClientSession:
        """The server's session, opened on first use."""
        opened = self._sessions.get(slug)
        if opened is None:
            if self._closing is None:
                self._closing = asyncio.Event()
            opened = asyncio.get_running_loop().create_future()
            self._sessions[slug] = opened
            holder = self._hold(slug, opened, self._closing)
            self._holders = [t for t in self._holders if not t.done()]
            self._holders.append(asyncio.create_task(holder))
        return await asyncio.shield(opened)

    async def _hold(
        self,
        slug: str,
        opened: asyncio.Future[ClientSession],
        closing: asyncio.Event,
    ) -> None:
        """Opens a session and holds it open until \`\`close()\`\`.

        A session is opened and closed in the same task, as the transports
        need. One that could not be opened, or that broke, is opened anew on
        the next call.
        """
        try:
            async with self._transport(slug) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    opened.set_result(session)
                    await closing.wait()
        except Exception as error:
            if not opened.done():
                opened.set_exception(error)
        finally:
            if self._sessions.get(slug) is opened:
                del self._sessions[slug]

    async def _close(self) -> None:
        if self._closing is not None:
            self._closing.set()
        await asyncio.gather(*self._holders, return_exceptions=True)
        self._closing, self._holders = None, []

    def _transport(self, slug: str) -> Any:
        """How to reach a server: at its URL with its token, or by its command.

        Settings given in code come first, then the environment variables,
        then the URL known when the workflow was generated.
        """
        server = MCP_SERVERS[slug]
        settings = self._settings.get(slug, {})
        if server["transport"] == "stdio":
            # The operator configures the command: none is written here.
            command = (
                settings.get("command")
                or self._env.get(server["command_env"])
                or ""
            ).split()
            if not command:
                raise RuntimeError(
                    f"{server['name']} runs over stdio: set "
                    f"{server['command_env']} to the command that starts it"
                )
            return stdio_client(
                StdioServerParameters(command=command[0], args=command[1:])
            )
        url = (
            settings.get("url")
            or self._env.get(server["url_env"])
            or server["url"]
        )
        if not url:
            raise RuntimeError(
                f"set {server['url_env']} to the URL of {server['name']}"
            )
        token = settings.get("token") or self._env.get(server["token_env"])
        headers = {"Authorization": f"Bearer {token}"} if token else None
        if server["transport"] == "sse":
            return sse_client(url, headers=headers)
        return streamablehttp_client(url, headers=headers)`;

/** What answers a human node, as the service takes it (`HumanAnswer`): emitted when the workflow has one. */
const HUMAN_ANSWERS = `ANSWER_MAX_LENGTH = ${HUMAN_ANSWER_MAX_LENGTH}
"""The longest answer a human node takes, in characters (code points)."""


def human_answer(text: str) -> dict[str, str]:
    """The resume value that answers a human node.

    Any text of at most \`\`ANSWER_MAX_LENGTH\`\` characters, the empty text
    included, as the service takes it: anything else raises here, before the
    run changes. Resume with \`\`Command(resume=human_answer(text))\`\`.
    """
    if not isinstance(text, str):
        raise TypeError("an answer is text")
    if len(text) > ANSWER_MAX_LENGTH:
        raise ValueError(f"answers are at most {ANSWER_MAX_LENGTH} characters")
    return {"answer": text}`;

const DECLARATIONS = `class WorkflowMessage(TypedDict):
    """A message of the transcript; \`\`node\`\` names the node that added it."""

    role: str
    content: str
    node: NotRequired[str]


class WorkflowRuntime(Protocol):
    """What the workflow needs from outside, for you to implement.

    A model for agent nodes and tools for tool nodes. Human nodes need nothing:
    they pause the run.
    """

    def agent(
        self,
        *,
        node: str,
        model: str | None,
        system_prompt: str,
        tools: list[str],
        messages: list[WorkflowMessage],
    ) -> str:
        """Answers the transcript as the agent node: the answer's text."""
        ...

    def call_tool(self, *, node: str, tool: str, args: dict[str, Any]) -> str:
        """Calls the tool: its result as text. Raising fails the run."""
        ...


def merge_vars(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Node results accumulate; a later result under the same name wins."""
    return {**a, **b}


class WorkflowState(TypedDict):
    """The run state.

    The input, the transcript, each node's result under its id (with the last
    agent or tool result as \`\`output\`\`), and the nodes that ran.
    """

    input: str
    messages: Annotated[list[WorkflowMessage], operator.add]
    vars: Annotated[dict[str, Any], merge_vars]
    path: Annotated[list[str], operator.add]


RECURSION_LIMIT = 100
"""Steps a run may take; router loops are allowed, endless ones stop."""


def initial_state(
    input: str, vars: dict[str, Any] | None = None
) -> WorkflowState:
    """The state a run starts from: the input is also the first message."""
    return {
        "input": input,
        "messages": [{"role": "user", "content": input}],
        "vars": dict(vars or {}),
        "path": [],
    }`;

interface NodeCode {
  node: WorkflowNode;
  fn: string;
  /** Whether the function takes the runtime (agent and tool nodes). */
  usesRuntime: boolean;
}

/**
 * The workflow as a Python module: the run state, one function per node, one routing function per router,
 * `build_workflow(runtime, checkpointer=None)` (the compiled graph) and `initial_state(input, vars=None)`.
 * Throws `WorkflowCompileError` for a workflow `compileWorkflow` would refuse.
 */
export function generatePython(
  workflow: Workflow,
  options: { name?: string; tools?: readonly CodegenTool[] } = {},
): string {
  const plan = planWorkflow(workflow);
  const moduleName = moduleNameOf(options.name ?? workflow.name);
  const servers = planMcpServers(workflow, options.tools);
  const connected = new Map(
    servers.flatMap((server) => server.tools.map((tool) => [tool.name, { server, upstream: tool.upstream }] as const)),
  );
  const mcp = servers.length > 0;
  const emitter = new Emitter();
  const names = new Names();
  const nodes: NodeCode[] = plan.nodes.map((node) => ({
    node,
    fn: names.claim(`${snakeCase(node.id)}_node`),
    usesRuntime: node.type === 'agent' || node.type === 'tool',
  }));
  const routeNames = new Map([...plan.routers.keys()].map((id) => [id, names.claim(`route_${snakeCase(id)}`)]));

  const functions = nodes.map((c) => {
    const source = nodeFunction(c, emitter, connected);
    const router = plan.routers.get(c.node.id);
    if (!router) return source;
    return `${source}\n\n\n${routeFunction(c.node, routeNames.get(c.node.id) ?? '', router, emitter)}`;
  });

  const hasHuman = nodes.some((c) => c.node.type === 'human');
  const hasEnd = nodes.some((c) => c.node.type === 'end');
  const imports = [
    ...(mcp ? ['import asyncio'] : []),
    ...(emitter.helpers.has('to_text') ? ['import json'] : []),
    'import operator',
    ...(mcp ? ['import os', 'import threading', 'from collections.abc import Mapping'] : []),
    'from typing import Annotated, Any, NotRequired, Protocol, TypedDict',
    '',
    `from langgraph.graph import ${hasEnd ? 'END, ' : ''}START, StateGraph`,
    ...(hasHuman ? ['from langgraph.types import interrupt'] : []),
    ...(mcp ? MCP_IMPORTS : []),
  ].join('\n');

  const sections = [
    header(workflow, moduleName, plan, hasHuman, servers),
    imports,
    DECLARATIONS,
    ...(hasHuman ? [HUMAN_ANSWERS] : []),
    ...HELPER_ORDER.filter((h) => emitter.helpers.has(h)).map((h) => HELPER_SOURCE[h]),
    ...functions,
    buildFunction(plan, nodes, routeNames),
    ...(mcp ? [mcpServersTable(servers), MCP_RUNTIME] : []),
  ];
  const [head, ...rest] = sections;
  return `${head}\n\n${rest.join('\n\n\n')}\n`;
}

function header(
  workflow: Workflow,
  moduleName: string,
  plan: WorkflowPlan,
  hasHuman: boolean,
  servers: McpServerPlan[],
): string {
  const description = workflow.description.trim();
  const width = WIDTH - 3;
  const mcp = servers.length > 0;
  const lines = [
    ...wrap(`${moduleName}: the workflow "${oneLine(workflow.name)}" as a LangGraph graph.`, width),
    '',
    ...wrap(
      'Generated by the workflow builder of Agent Service. It takes the same steps as the service does when it ' +
        `runs the workflow: ${plan.nodes.length} nodes, each one function below, and a routing function per ` +
        `router. It needs \`\`${LANGGRAPH_PYTHON_REQUIREMENT}\`\`` +
        (mcp
          ? ` (Python 3.11+), and \`\`${MCP_PYTHON_REQUIREMENT}\`\` for its connected tools.`
          : ' only (Python 3.11+).'),
      width,
    ),
    ...(description ? ['', ...wrap(description, width)] : []),
    ...(mcp ? ['', ...mcpHeader(servers, width)] : []),
    '',
    'Run it with your implementation of ``WorkflowRuntime``::',
    '',
    '    from langgraph.checkpoint.memory import InMemorySaver',
    '    from langgraph.types import Command',
    '',
    `    from ${moduleName} import ${mcp ? 'McpRuntime, ' : ''}build_workflow, ${hasHuman ? 'human_answer, ' : ''}initial_state`,
    '',
  ];
  const run = [
    '    graph = build_workflow(runtime, checkpointer=InMemorySaver())',
    '    config = {"configurable": {"thread_id": "run-1"}}',
    '    state = graph.invoke(initial_state("Hello"), config)',
    ...(hasHuman
      ? [
          '    # A human node pauses the run: its question is in',
          '    # graph.get_state(config).tasks[0].interrupts[0].value.',
          '    # Any text answers it, the empty text too.',
          '    state = graph.invoke(Command(resume=human_answer("yes")), config)',
        ]
      : []),
    '    print(state["vars"].get("output"), state["path"])',
  ];
  if (mcp) lines.push('    with McpRuntime(your_runtime) as runtime:', ...run.map((l) => STEP + l));
  else lines.push(...run);
  return docstring(lines, '');
}

/** The header's paragraph on connected tools: how each server is reached, and where its credential comes from. */
function mcpHeader(servers: McpServerPlan[], width: number): string[] {
  return [
    ...wrap(
      'Tools named ``<slug>__<tool>`` come from MCP servers that Agent Service was connected to. ' +
        '``McpRuntime(runtime)`` calls them through the MCP client and leaves every other tool to your runtime. ' +
        'No credential is written here: each server is reached with these environment variables (or ' +
        '``McpRuntime`` arguments):',
      width,
    ),
    '',
    ...servers.flatMap((server) => wrap(`- ${serverSummary(server)}`, width).map((l, i) => (i === 0 ? l : `  ${l}`))),
  ];
}

/** The connected servers' table: how to reach each, and the variables that say so. */
function mcpServersTable(servers: McpServerPlan[]): string {
  const table = dict(
    servers.map((server) => [
      server.slug,
      dict([
        ['name', str(server.name)],
        ['transport', str(server.transport)],
        ['url', server.url === null ? atom('None') : str(server.url)],
        ['url_env', str(server.urlEnv)],
        ['token_env', str(server.tokenEnv)],
        ['command_env', str(server.commandEnv)],
        ['tools', dict(server.tools.map((t) => [t.name, str(t.upstream)]))],
      ]),
    ]),
  );
  return [
    statement('', 'MCP_SERVERS: dict[str, dict[str, Any]] = ', table),
    docstring(
      [
        "The MCP servers of the workflow's connected tools, by slug.",
        '',
        ...wrap(
          "No credential is written here: a server's bearer token is read from its ``token_env`` variable, its " +
            'URL from ``url_env`` (else ``url``, where it was served when the workflow was generated), and the ' +
            'command that starts a stdio server from ``command_env``. ``tools`` maps the names of its tools the ' +
            'workflow uses to their names on the server.',
          WIDTH - 3,
        ),
      ],
      '',
    ),
  ].join('\n');
}

/** What a node returns: the message it adds (if any), its results in ``vars``, and its step in ``path``. */
function update(id: string, message: [role: string, content: Py] | undefined, vars: [string, Py][]): Py {
  return dict([
    ...(message
      ? [
          [
            'messages',
            list([
              dict([
                ['role', str(message[0])],
                ['content', message[1]],
                ['node', str(id)],
              ]),
            ]),
          ] as [string, Py],
        ]
      : []),
    ...(vars.length > 0 ? [['vars', dict(vars)] as [string, Py]] : []),
    ['path', list([str(id)])],
  ]);
}

function nodeFunction(c: NodeCode, emitter: Emitter, connected: ReadonlyMap<string, ConnectedTool>): string {
  const { node: n, fn } = c;
  const body: string[] = [];
  const params = c.usesRuntime ? 'runtime: WorkflowRuntime, state: WorkflowState' : 'state: WorkflowState';
  let result: Py;
  switch (n.type) {
    case 'agent': {
      const request = call(
        'runtime.agent',
        kwarg('node', str(n.id)),
        kwarg('model', n.data.model === undefined ? atom('None') : str(n.data.model)),
        kwarg('system_prompt', str(systemPromptOf(n))),
        kwarg('tools', list((n.data.tools ?? []).map(str))),
        kwarg('messages', atom('state["messages"]')),
      );
      body.push(statement(STEP, 'text = ', request));
      result = update(
        n.id,
        ['assistant', atom('text')],
        [
          [n.id, atom('text')],
          ['output', atom('text')],
        ],
      );
      break;
    }
    case 'tool': {
      const tool = n.data.tool ?? '';
      const request = call(
        'runtime.call_tool',
        kwarg('node', str(n.id)),
        kwarg('tool', str(tool)),
        kwarg('args', atom('args')),
      );
      body.push(statement(STEP, 'args = ', emitter.argument(n.data.args ?? {})));
      body.push(statement(STEP, 'text = ', request));
      const content: Py = { type: 'chain', op: '+', operands: [str(`Result of ${tool}: `), atom('text')] };
      result = update(
        n.id,
        ['user', content],
        [
          [n.id, atom('text')],
          ['output', atom('text')],
        ],
      );
      break;
    }
    case 'human': {
      emitter.use('answer_of');
      const question = dict([
        ['node', str(n.id)],
        ['question', str(questionOf(n))],
      ]);
      body.push(`${STEP}# On resume LangGraph runs this node again; interrupt() returns the answer.`);
      body.push(statement(STEP, 'answer = ', call('answer_of', call('interrupt', question))));
      result = update(n.id, ['user', atom('answer')], [[n.id, atom('answer')]]);
      break;
    }
    default:
      result = update(n.id, undefined, []);
  }
  body.push(statement(STEP, 'return ', result));
  const signature = `def ${fn}(${params}) -> dict[str, Any]:`;
  const head =
    textWidth(signature) <= WIDTH
      ? signature
      : `def ${fn}(\n${STEP}${params.replace(', ', `,\n${STEP}`)},\n) -> dict[str, Any]:`;
  return [head, docstring(nodeDoc(n, connected), STEP), ...body].join('\n');
}

function routeFunction(n: WorkflowNode, fn: string, router: RouterPlan, emitter: Emitter): string {
  const doc = docstring(
    wrap(`Where ${title(n, 'router')} goes: the first branch whose condition holds, else its default.`, DOC_WIDTH),
    STEP,
  );
  const branches = router.branches.map((b) =>
    [
      `${STEP}# ${visible(oneLine(b.condition))}`,
      statement(STEP, 'if ', emitter.condition(b.expr), ':'),
      `${STEP}${STEP}return ${pyStringLiteral(b.target)}`,
    ].join('\n'),
  );
  return [
    `def ${fn}(state: WorkflowState) -> str:`,
    doc,
    ...branches,
    `${STEP}return ${pyStringLiteral(router.fallback)}`,
  ].join('\n');
}

function buildFunction(plan: WorkflowPlan, nodes: NodeCode[], routeNames: Map<string, string>): string {
  const lines = [
    'def build_workflow(runtime: WorkflowRuntime, checkpointer: Any = None) -> Any:',
    docstring(
      [
        'The workflow as a compiled LangGraph graph.',
        '',
        'Human nodes need a checkpointer: a paused run is resumed from it.',
      ],
      STEP,
    ),
    `${STEP}graph = StateGraph(WorkflowState)`,
  ];
  const add = (method: string, ...args: Py[]) => lines.push(statement(STEP, 'graph.', call(method, ...args)));
  for (const c of nodes) {
    add(
      'add_node',
      str(c.node.id),
      c.usesRuntime
        ? { type: 'lambda', params: 'state', body: call(c.fn, atom('runtime'), atom('state')) }
        : atom(c.fn),
    );
  }
  add('add_edge', atom('START'), str(plan.start));
  for (const [source, target] of plan.edges) add('add_edge', str(source), str(target));
  for (const [id, router] of plan.routers) {
    const targets = [...new Set([...router.branches.map((b) => b.target), router.fallback])];
    add('add_conditional_edges', str(id), atom(routeNames.get(id) ?? ''), list(targets.map(str)));
  }
  for (const c of nodes) if (c.node.type === 'end') add('add_edge', str(c.node.id), atom('END'));
  lines.push(`${STEP}compiled = graph.compile(checkpointer=checkpointer)`);
  lines.push(`${STEP}return compiled.with_config(recursion_limit=RECURSION_LIMIT)`);
  return lines.join('\n');
}
