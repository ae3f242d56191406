import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command, MemorySaver } from '@langchain/langgraph';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOfflineLlm } from '../../src/adapters/llm/offline.js';
import { type CodegenTool, generateCode } from '../../workflows/codegen/index.js';
import { generatePython } from '../../workflows/codegen/python.js';
import { generateTypeScript } from '../../workflows/codegen/typescript.js';
import { type CompiledWorkflow, compileWorkflow } from '../../workflows/compile.js';
import { WorkflowCompileError, answerOf, initialState, planWorkflow } from '../../workflows/plan.js';
import {
  LANGGRAPH_JS_RANGE,
  LANGGRAPH_PYTHON_REQUIREMENT,
  MCP_PYTHON_REQUIREMENT,
  MCP_SDK_JS_RANGE,
} from '../../workflows/codegen/versions.js';
import { evaluate, fillArgs, parseExpression, scopeOf, truthy } from '../../workflows/expression.js';
import {
  type AgentRequest,
  HumanAnswer,
  type ToolRequest,
  type WorkflowRuntime,
  humanResume,
} from '../../workflows/runtime.js';
import { type Workflow, parseWorkflow } from '../../workflows/schema.js';
import { type Availability, describeWithService } from '../helpers/services.js';
import { compilerOptions, typeCheck } from '../helpers/typecheck.js';
import {
  type HttpUpstream,
  type TestUpstream,
  everythingStdioCommand,
  startEverythingSse,
  startTestUpstream,
} from '../helpers/upstreams.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// Agent nodes answer with the real offline model. Tools are in-process functions here: a small table standing in
// for the MCP tools the service's runtime would call.
const TOOLS: Record<string, (args: Record<string, unknown>) => string> = {
  lookup: (args) => `found ${JSON.stringify(args)}`,
};

type RuntimeCall = { agent: Omit<AgentRequest, 'messages'> & { messages: number } } | { tool: ToolRequest };

/** The runtime both the compiled graph and the generated module run with; it records what they asked of it. */
function recordingRuntime(): WorkflowRuntime & { calls: RuntimeCall[] } {
  const llm = createOfflineLlm();
  const calls: RuntimeCall[] = [];
  return {
    calls,
    async agent(request) {
      calls.push({ agent: { ...request, messages: request.messages.length } });
      const messages = [
        { role: 'system' as const, content: request.systemPrompt },
        ...request.messages.map(({ role, content }) => ({ role, content })),
      ];
      return (await llm.complete({ messages })).text;
    },
    callTool(request) {
      calls.push({ tool: request });
      const tool = TOOLS[request.tool];
      return tool ? Promise.resolve(tool(request.args)) : Promise.reject(new Error(`no tool ${request.tool}`));
    },
  };
}

type EdgeSpec = [source: string, target: string, condition?: string];

function workflow(name: string, nodes: unknown[], edges: EdgeSpec[]): Workflow {
  return parseWorkflow({
    name,
    nodes,
    edges: edges.map(([source, target, condition], i) => ({
      id: `e${i + 1}`,
      source,
      target,
      ...(condition !== undefined && { data: { condition } }),
    })),
  });
}

/** Text that breaks naive quoting in TypeScript, Python, comments and docstrings alike. */
const HOSTILE = 'Say "hi" & \'bye\' \\ back\\nslash ${x} `tick` """ triple\'\'\' */ ünï 中文 😀 \u2028\t\u0000 end "';

// Answer text that must reach a condition intact: quotes of both kinds, a backslash, `${`, a comment's end.
const TRICKY = `'tricky' "quoted" \\ $` + '{x} */';

/** A string literal of the expression language. */
const expressionString = (text: string): string => `'${text.replace(/[\\']/g, '\\$&')}'`;

/** A draft–lookup–review loop with ids that are not identifiers and hostile text everywhere users write it. */
const SUPPORT = workflow(
  'Support "desk" flow',
  [
    { id: 'start', type: 'start', data: { label: 'Start' } },
    {
      id: 'draft-reply',
      type: 'agent',
      data: { label: `Draft ${HOSTILE}`, system_prompt: HOSTILE, tools: ['lookup'], model: 'model-"x"' },
    },
    {
      id: 'look-up',
      type: 'tool',
      data: {
        tool: 'lookup',
        args: JSON.parse(
          JSON.stringify({
            query: '{{ input }}',
            draft: '{{ state["draft-reply"] }}',
            text: `${HOSTILE} {{ review }}!`,
            nested: { list: ['{{ missing }}', HOSTILE, 3, true, null], n: 1.5 },
            bad: '{{ unclosed',
          }),
        ) as Record<string, unknown>,
      },
    },
    { id: 'review', type: 'human', data: { label: 'Review', question: HOSTILE } },
    { id: 'decide', type: 'router' },
    { id: 'escalate', type: 'end' },
    { id: 'done', type: 'end' },
  ],
  [
    ['start', 'draft-reply'],
    ['draft-reply', 'look-up'],
    ['look-up', 'review'],
    ['review', 'decide'],
    ['decide', 'draft-reply', 'review == "again"'],
    ['decide', 'escalate', `review contains ${expressionString(TRICKY)}`],
    ['decide', 'done'],
  ],
);

/** Tool arguments with an own `__proto__` key (JSON can carry one; an object literal cannot). */
const PROTO_ARGS = '{"__proto__": "{{ input }}", "constructor": 1}';

/**
 * A workflow whose tool arguments have an own `__proto__` key. The schema drops such a key, so it is set after
 * parsing: generated code must still keep it an argument rather than a prototype.
 */
const PROTO = ((): Workflow => {
  const wf = workflow(
    'proto',
    [
      { id: 'start', type: 'start' },
      { id: 'call_it', type: 'tool', data: { tool: 'lookup' } },
      { id: 'end', type: 'end' },
    ],
    [
      ['start', 'call_it'],
      ['call_it', 'end'],
    ],
  );
  const args = JSON.parse(PROTO_ARGS) as Record<string, unknown>;
  return { ...wf, nodes: wf.nodes.map((n) => (n.type === 'tool' ? { ...n, data: { ...n.data, args } } : n)) };
})();

/** Ids whose derived names collide (`a-b` and `a_b`), and a router id that would make `routeX` twice. */
const COLLIDING = workflow(
  'colliding names',
  [
    { id: 'start', type: 'start' },
    { id: 'a-b', type: 'agent' },
    { id: 'a_b', type: 'agent' },
    { id: 'x', type: 'router' },
    { id: 'X', type: 'router' },
    { id: 'end', type: 'end' },
  ],
  [
    ['start', 'a-b'],
    ['a-b', 'a_b'],
    ['a_b', 'x'],
    ['x', 'X'],
    ['X', 'end'],
  ],
);

/**
 * Tools of connected MCP servers (`<slug>__<tool>`) beside one of the service's own: a tool node on each side, and
 * an agent node offered tools of an SSE and a stdio server.
 */
const CONNECTED = workflow(
  'connected',
  [
    { id: 'start', type: 'start' },
    { id: 'read', type: 'tool', data: { tool: 'files__echo', args: { text: '{{ input }}' } } },
    { id: 'who', type: 'tool', data: { tool: 'files__who_am_i' } },
    { id: 'look', type: 'tool', data: { tool: 'lookup', args: { found: '{{ read }}' } } },
    {
      id: 'relay',
      type: 'agent',
      data: { system_prompt: 'Relay it.', tools: ['relay__echo', 'local__echo', 'lookup'] },
    },
    { id: 'end', type: 'end' },
  ],
  [
    ['start', 'read'],
    ['read', 'who'],
    ['who', 'look'],
    ['look', 'relay'],
    ['relay', 'end'],
  ],
);

/** The tools as the builder lists them: each connected one with its server, the service's own without. */
function connectedTools(urls: { files: string; relay: string }): CodegenTool[] {
  const files = { slug: 'files', name: 'Files "docs"', transport: 'streamable_http', url: urls.files };
  return [
    { name: 'files__echo', server: files },
    // Named here otherwise than on its server (as the service names a tool whose own name is not safe).
    { name: 'files__who_am_i', upstreamName: 'whoami', server: files },
    { name: 'files__add', server: files },
    { name: 'relay__echo', server: { slug: 'relay', name: 'Relay', transport: 'sse', url: urls.relay } },
    { name: 'local__echo', server: { slug: 'local', name: 'Local', transport: 'stdio', url: null } },
    { name: 'lookup' },
  ];
}

/** The bearer token the test upstream demands: given to the generated code through its environment only. */
const TOKEN = `token-${randomBytes(8).toString('hex')}`;

const CONDITIONS = [
  'flag',
  'not flag',
  '!flag',
  'count > 2',
  'count >= 2',
  'count < 2.5',
  'count <= -1',
  'count == 3',
  'count == "3"',
  'flag == 1',
  'name == "Ann"',
  "name != 'Ann'",
  'name < "B"',
  'name > 3',
  'tags contains "x"',
  'tags contains 3',
  'name contains "n"',
  'profile contains "age"',
  'profile.age == 30',
  'profile["age"] >= 18 && flag',
  'tags[0] == "x"',
  'tags[5] == null',
  'nested.list[1].v == true',
  'nested == nested',
  'missing',
  'missing == null',
  'flag || count > 2',
  '(flag or count > 2) and not (name == "Bob")',
  'not (flag and count)',
  'flag and count or name',
  'name or flag and count > 2',
  'not not flag',
  'input contains "hello"',
  'messages[0].content == input',
  'output',
  'state.output == "done"',
  'state contains "output"',
  '0',
  'true',
  'null',
  "'\"quoted\" \\\\ ${x} */' contains '\"'",
];

const SCOPES: { input: string; vars: Record<string, unknown> }[] = [
  { input: 'hello world', vars: {} },
  {
    input: 'say hello',
    vars: {
      flag: true,
      count: 3,
      name: 'Ann',
      tags: ['x', 'y'],
      profile: { age: 30 },
      nested: { list: [{ v: false }, { v: true }] },
    },
  },
  { input: 'bye', vars: { flag: false, count: 0, name: 'bob', tags: [], profile: {}, output: 'done' } },
  { input: '', vars: { flag: 1, count: 2, name: '', tags: ['y'], profile: { age: '30' }, nested: { list: [] } } },
  { input: 'HELLO', vars: { flag: 'yes', count: -1, name: 'Ann', tags: [3, 'x'], profile: null, output: 0 } },
  { input: 'hello', vars: { count: 2.5, name: 'B', flag: [], output: null, nested: { list: [1, { v: 1 }] } } },
];

/** One router per condition, in a chain: `cN` goes to `yN` when its condition holds, else to `nN`. */
const CHAIN = workflow(
  'conditions',
  [
    { id: 'start', type: 'start' },
    ...CONDITIONS.flatMap((_, i) => [
      { id: `c${i}`, type: 'router' },
      { id: `y${i}`, type: 'router' },
      { id: `n${i}`, type: 'router' },
    ]),
    { id: 'end', type: 'end' },
  ],
  [
    ['start', 'c0'],
    ...CONDITIONS.flatMap((condition, i): EdgeSpec[] => {
      const next = i === CONDITIONS.length - 1 ? 'end' : `c${i + 1}`;
      return [
        [`c${i}`, `y${i}`, condition],
        [`c${i}`, `n${i}`],
        [`y${i}`, next],
        [`n${i}`, next],
      ];
    }),
  ],
);

/** Which branch each condition should take in a scope, by the expression language's own interpreter. */
function expectedBranches(scope: (typeof SCOPES)[number]): string[] {
  const values = scopeOf({ input: scope.input, messages: [{ role: 'user', content: scope.input }], vars: scope.vars });
  return CONDITIONS.map((condition, i) => {
    const parsed = parseExpression(condition);
    if (!parsed.ok) throw new Error(`${condition}: ${parsed.message}`);
    return truthy(evaluate(parsed.expr, values)) ? `y${i}` : `n${i}`;
  });
}

interface GeneratedModule {
  buildWorkflow(runtime: WorkflowRuntime, options?: { checkpointer?: MemorySaver }): CompiledWorkflow;
  initialState: typeof initialState;
  RECURSION_LIMIT: number;
  /** Only in a module with a human node. */
  humanAnswer?: (text: unknown) => unknown;
  ANSWER_MAX_LENGTH?: number;
  /** Only in a module that calls tools of connected MCP servers. */
  connectMcpServers?: (runtime: WorkflowRuntime, options?: McpOptions) => McpRuntime;
  MCP_SERVERS?: Record<string, Record<string, unknown>>;
}

interface McpOptions {
  servers?: Record<string, { url?: string; token?: string; command?: string }>;
  env?: Record<string, string | undefined>;
}

interface McpRuntime extends WorkflowRuntime {
  listTools(names: string[]): Promise<{ name: string; description: string; inputSchema: Record<string, unknown> }[]>;
  close(): Promise<void>;
}

/** Answers a human node may be given, good and bad: the service's rule (`HumanAnswer`) decides which are taken. */
const ANSWERS: unknown[] = [
  '',
  'ok',
  ' ',
  'x'.repeat(20_000),
  'x'.repeat(20_001),
  // Counted in characters (code points), not in UTF-16 units: each of these is two units.
  '😀'.repeat(20_000),
  '😀'.repeat(20_000) + 'x',
  7,
  0,
  false,
  true,
  null,
  ['ok'],
  { answer: 'ok' },
];

/** Resume values a human node may meet, and the answer the service's own node reads from each. */
const RESUME_VALUES: unknown[] = ['', 'ok', { answer: '' }, { answer: 'ok' }, { answer: 7 }, 7, null, ['a'], { x: 1 }];

interface Run {
  /** At each pause (and at the end): the path so far and the interrupt's value. */
  steps: { path: string[]; interrupt: unknown }[];
  vars: Record<string, unknown>;
  messages: unknown[];
  calls: RuntimeCall[];
}

/** Runs a graph to its end, answering each human question with the next answer (a resume value). */
async function run(
  build: (runtime: WorkflowRuntime) => CompiledWorkflow,
  start: ReturnType<typeof initialState>,
  answers: unknown[],
): Promise<Run> {
  const runtime = recordingRuntime();
  const graph = build(runtime);
  const config = { configurable: { thread_id: randomUUID() } };
  const pending = [...answers];
  let state = await graph.invoke(start, config);
  const steps: Run['steps'] = [];
  for (;;) {
    const snapshot = await graph.getState(config);
    const interrupt: unknown = snapshot.tasks[0]?.interrupts[0]?.value;
    steps.push({ path: (snapshot.values as { path: string[] }).path, interrupt });
    if (interrupt === undefined) break;
    const answer = pending.shift();
    if (answer === undefined) throw new Error(`no answer left for ${JSON.stringify(interrupt)}`);
    state = await graph.invoke(new Command({ resume: answer }), config);
  }
  return { steps, vars: state.vars, messages: state.messages, calls: runtime.calls };
}

describe('generated TypeScript', () => {
  const dir = path.join(ROOT, 'test', '.generated', randomBytes(6).toString('hex'));
  const modules = new Map<string, GeneratedModule>();
  const sources: Record<string, [Workflow, string]> = {
    support: [SUPPORT, ''],
    proto: [PROTO, ''],
    colliding: [COLLIDING, ''],
    chain: [CHAIN, ''],
    connected: [CONNECTED, ''],
  };
  let diagnostics: string[] = [];
  // Real servers for the connected tools: the test upstream over streamable HTTP (demanding a bearer token), and
  // server-everything over SSE; server-everything over stdio is started by the generated code itself.
  let files: TestUpstream;
  let relay: HttpUpstream;

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    [files, relay] = await Promise.all([startTestUpstream({ requireBearer: TOKEN }), startEverythingSse()]);
    const tools = connectedTools({ files: files.url, relay: relay.url });
    const files_ = Object.entries(sources).map(([key, entry]) => {
      const generated = generateCode(entry[0], { language: 'typescript', name: key, tools });
      entry[1] = generated.code;
      const file = path.join(dir, generated.filename);
      writeFileSync(file, generated.code);
      return [key, file] as const;
    });
    diagnostics = typeCheck(files_.map(([, file]) => file));
    for (const [key, file] of files_) {
      modules.set(key, (await import(pathToFileURL(file).href)) as GeneratedModule);
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.all([files?.close(), relay?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const moduleOf = (key: string): GeneratedModule => {
    const loaded = modules.get(key);
    if (!loaded) throw new Error(`module ${key} was not generated`);
    return loaded;
  };

  it("type-checks under the repository's strict options (unused locals and parameters, unchecked indexes)", () => {
    const options = compilerOptions();
    expect(options).toMatchObject({
      strict: true,
      noUnusedLocals: true,
      noUnusedParameters: true,
      noUncheckedIndexedAccess: true,
      module: ts.ModuleKind.NodeNext,
    });
    expect(diagnostics).toEqual([]);
  });

  it('runs a router, tool, human loop as the compiled graph does: same steps, questions, requests and vars', async () => {
    const generated = moduleOf('support');
    const answers = ['again', `it is ${TRICKY} indeed`];
    const compiled = await run(
      (runtime) => compileWorkflow(SUPPORT, runtime, { checkpointer: new MemorySaver() }),
      initialState('Where is my order?'),
      answers,
    );
    const fromCode = await run(
      (runtime) => generated.buildWorkflow(runtime, { checkpointer: new MemorySaver() }),
      generated.initialState('Where is my order?'),
      answers,
    );

    expect(fromCode).toEqual(compiled);
    // What both agreed on: the loop ran twice, the hostile question came through intact, the tool got its
    // arguments filled, and the second answer took the escalation branch.
    const round = ['draft-reply', 'look-up'];
    expect(compiled.steps.map((s) => s.path)).toEqual([
      ['start', ...round],
      ['start', ...round, 'review', 'decide', ...round],
      ['start', ...round, 'review', 'decide', ...round, 'review', 'decide', 'escalate'],
    ]);
    expect(compiled.steps[0]?.interrupt).toEqual({ node: 'review', question: HOSTILE });
    const firstTool = compiled.calls.find((c) => 'tool' in c);
    expect(firstTool && 'tool' in firstTool ? firstTool.tool.args : undefined).toEqual({
      query: 'Where is my order?',
      draft: expect.stringMatching(/^Offline model/) as unknown,
      text: `${HOSTILE} !`,
      nested: { list: [null, HOSTILE, 3, true, null], n: 1.5 },
      bad: '{{ unclosed',
    });
    expect(compiled.calls.find((c) => 'agent' in c)).toEqual({
      agent: { node: 'draft-reply', model: 'model-"x"', systemPrompt: HOSTILE, tools: ['lookup'], messages: 1 },
    });
    expect(compiled.vars.review).toBe(answers[1]);
  });

  it('takes the empty answer as the service does: wrapped, it goes on with "" as the step’s result', async () => {
    const generated = moduleOf('support');
    const compiled = await run(
      (runtime) => compileWorkflow(SUPPORT, runtime, { checkpointer: new MemorySaver() }),
      initialState('Where is my order?'),
      [humanResume('again'), humanResume('')],
    );
    const fromCode = await run(
      (runtime) => generated.buildWorkflow(runtime, { checkpointer: new MemorySaver() }),
      generated.initialState('Where is my order?'),
      [generated.humanAnswer!('again'), generated.humanAnswer!('')],
    );
    expect(fromCode).toEqual(compiled);
    expect(compiled.vars.review).toBe('');
    expect(compiled.messages.at(-1)).toEqual({ role: 'user', content: '', node: 'review' });
    // Neither "again" nor the tricky text: the default branch ends the run.
    expect(compiled.steps.at(-1)?.path.at(-1)).toBe('done');
  });

  it('refuses, before the run changes, the answers the service refuses, and reads resume values as it does', async () => {
    const generated = moduleOf('support');
    expect(generated.ANSWER_MAX_LENGTH).toBe(20_000);
    for (const answer of ANSWERS) {
      const label = JSON.stringify(answer).slice(0, 30);
      if (HumanAnswer.safeParse(answer).success) {
        expect(generated.humanAnswer!(answer), label).toEqual(humanResume(answer as string));
      } else expect(() => generated.humanAnswer!(answer), label).toThrow(/An answer is text|Answers are at most/);
    }
    // Each resume value reaches the human node's result as the service's own node reads it (LangGraph.js 1.4 takes
    // a falsy one as no input at all, before any node sees it: that is why answers are wrapped).
    for (const resume of RESUME_VALUES.filter(Boolean)) {
      const [fromCode, compiled] = await Promise.all(
        [
          (runtime: WorkflowRuntime) => generated.buildWorkflow(runtime, { checkpointer: new MemorySaver() }),
          (runtime: WorkflowRuntime) => compileWorkflow(SUPPORT, runtime, { checkpointer: new MemorySaver() }),
        ].map((build) => run(build, initialState('x'), [resume, humanResume('done')])),
      );
      expect(fromCode?.messages, JSON.stringify(resume)).toEqual(compiled?.messages);
      expect(compiled?.messages.filter((m) => (m as { node?: string }).node === 'review')[0]).toMatchObject({
        content: answerOf(resume),
      });
    }
  });

  it('names the LangGraph.js releases it needs in its header, and the one installed here is among them', () => {
    const [, code] = sources.support ?? [];
    expect(code?.replace(/\n \* /g, ' ')).toContain(`It needs \`@langchain/langgraph\` (${LANGGRAPH_JS_RANGE})`);
    const installed = (
      JSON.parse(readFileSync(path.join(ROOT, 'node_modules/@langchain/langgraph/package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
    const [, low, high] = /^>=(\d+\.\d+\.\d+) <(\d+)$/.exec(LANGGRAPH_JS_RANGE) ?? [];
    const parts = (v: string) => v.split('.').map(Number);
    const [major = 0] = parts(installed);
    const atLeast = parts(installed)
      .map((n, i) => n - (parts(low ?? '')[i] ?? 0))
      .find((d) => d !== 0);
    expect(atLeast === undefined || atLeast > 0, `${installed} >= ${low}`).toBe(true);
    expect(major).toBeLessThan(Number(high));
  });

  it('passes an own `__proto__` argument on as an argument, as fillArgs does', async () => {
    const generated = moduleOf('proto');
    const compiled = await run(
      (runtime) => compileWorkflow(PROTO, runtime, { checkpointer: new MemorySaver() }),
      initialState('cats'),
      [],
    );
    const fromCode = await run(
      (runtime) => generated.buildWorkflow(runtime, { checkpointer: new MemorySaver() }),
      generated.initialState('cats'),
      [],
    );
    expect(fromCode).toEqual(compiled);
    const argsOf = (calls: RuntimeCall[]) => {
      const [call] = calls;
      return call && 'tool' in call ? call.tool.args : {};
    };
    for (const args of [argsOf(compiled.calls), argsOf(fromCode.calls)]) {
      expect(Object.keys(args)).toEqual(['__proto__', 'constructor']);
      expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
      expect(args).toEqual(fillArgs(JSON.parse(PROTO_ARGS) as Record<string, unknown>, { input: 'cats' }));
    }
  });

  it('gives colliding ids distinct function names and runs them all', async () => {
    const [, code] = sources.colliding ?? [];
    expect(code).toMatch(/function aBNode\(/);
    expect(code).toMatch(/function aBNode2\(/);
    expect(code).toMatch(/function routeX\(/);
    expect(code).toMatch(/function routeX2\(/);
    const state = await moduleOf('colliding').buildWorkflow(recordingRuntime()).invoke(initialState('hi'));
    expect(state.path).toEqual(['start', 'a-b', 'a_b', 'x', 'X', 'end']);
  });

  it.each(SCOPES.map((scope, i) => [i, scope] as const))(
    'routes on conditions as the expression interpreter evaluates them (scope %i)',
    async (_i, scope) => {
      const expected = expectedBranches(scope);
      const generated = moduleOf('chain');
      const fromCode = await generated
        .buildWorkflow(recordingRuntime())
        .invoke(generated.initialState(scope.input, scope.vars));
      const compiled = await compileWorkflow(CHAIN, recordingRuntime()).invoke(initialState(scope.input, scope.vars));
      const taken = (p: string[]) => p.filter((id) => /^[yn]\d+$/.test(id));
      expect(taken(fromCode.path)).toEqual(expected);
      expect(taken(compiled.path)).toEqual(expected);
    },
  );

  it('compiles conditions to code rather than interpreting their text', () => {
    const [, code] = sources.chain ?? [];
    const branch = (condition: string, test: string) =>
      `  // ${condition}\n  if (${test}) return "y${CONDITIONS.indexOf(condition)}";`;
    expect(code).toContain(branch('flag', 'truthy(get(state, ["flag"]))'));
    expect(code).toContain(branch('not flag', '!truthy(get(state, ["flag"]))'));
    expect(code).toContain(branch('count > 2', 'compare(">", get(state, ["count"]), 2)'));
    expect(code).toContain(branch("name != 'Ann'", '!equals(get(state, ["name"]), "Ann")'));
    expect(code).toContain(branch('profile.age == 30', 'equals(get(state, ["profile", "age"]), 30)'));
    expect(code).toContain(branch('tags[0] == "x"', 'equals(get(state, ["tags", 0]), "x")'));
    expect(code).toContain(branch('state contains "output"', 'contains(get(state, []), "output")'));
    expect(code).toContain(
      [
        '  // flag and count or name',
        '  if (',
        '    (truthy(get(state, ["flag"])) && truthy(get(state, ["count"]))) ||',
        '    truthy(get(state, ["name"]))',
        '  )',
        `    return "y${CONDITIONS.indexOf('flag and count or name')}";`,
      ].join('\n'),
    );
    expect(code).not.toMatch(/parseExpression|evaluate|eval\(/);
  });

  it('declares the runtime interface and only the helpers it uses', () => {
    const [, code] = sources.colliding ?? [];
    for (const declaration of ['interface WorkflowMessage', 'interface AgentRequest', 'interface ToolRequest']) {
      expect(code).toContain(`export ${declaration}`);
    }
    expect(code).toContain('export interface WorkflowRuntime');
    expect(code).not.toMatch(/function (get|truthy|equals|compare|contains|toText)\(/);
    expect(code).not.toContain('interrupt');
    expect(moduleOf('colliding').RECURSION_LIMIT).toBe(100);
  });

  it('leaves the MCP client out of a module without connected tools', () => {
    for (const key of ['support', 'proto', 'colliding', 'chain']) {
      const [, code] = sources[key] ?? [];
      expect(code, key).not.toMatch(/modelcontextprotocol|MCP_SERVER|connectMcpServers/);
      expect(code, key).toContain('and `@langchain/core` only.');
    }
  });

  it('reaches connected servers through the MCP SDK, by URL and token variables, with no credential in the code', () => {
    const [, code = ''] = sources.connected ?? [];
    for (const line of [
      'import { Client } from "@modelcontextprotocol/sdk/client/index.js";',
      'import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";',
      'import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";',
      'import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";',
    ])
      expect(code).toContain(line);
    expect(code.replace(/\n \* /g, ' ')).toContain(`\`@modelcontextprotocol/sdk\` (${MCP_SDK_JS_RANGE})`);
    // Each server: its URL known now (not a secret) and the variables for URL, token and (stdio) command.
    expect(moduleOf('connected').MCP_SERVERS).toEqual({
      files: {
        name: 'Files "docs"',
        transport: 'streamable_http',
        url: files.url,
        urlEnv: 'MCP_SERVER_FILES_URL',
        tokenEnv: 'MCP_SERVER_FILES_TOKEN',
        commandEnv: 'MCP_SERVER_FILES_COMMAND',
        tools: { files__echo: 'echo', files__who_am_i: 'whoami' },
      },
      local: {
        name: 'Local',
        transport: 'stdio',
        url: null,
        urlEnv: 'MCP_SERVER_LOCAL_URL',
        tokenEnv: 'MCP_SERVER_LOCAL_TOKEN',
        commandEnv: 'MCP_SERVER_LOCAL_COMMAND',
        tools: { local__echo: 'echo' },
      },
      relay: {
        name: 'Relay',
        transport: 'sse',
        url: relay.url,
        urlEnv: 'MCP_SERVER_RELAY_URL',
        tokenEnv: 'MCP_SERVER_RELAY_TOKEN',
        commandEnv: 'MCP_SERVER_RELAY_COMMAND',
        tools: { relay__echo: 'echo' },
      },
    });
    expect(code).toContain('const env = options.env ?? process.env;');
    expect(code).toContain('const token = settings.token ?? env[server.tokenEnv];');
    expect(code).toContain('Authorization: `Bearer ${token}`');
    expect(code).not.toContain(TOKEN);
    // Tools the workflow does not use are not named; the service's own tool stays the runtime's.
    expect(code).not.toContain('files__add');
    expect(code).toContain('tool: "lookup"');
    expect(code.replace(/\n \* /g, ' ')).toContain(
      'Tool `read`: calls files__echo (the tool `echo` of the MCP server "Files "docs"", through `connectMcpServers`)',
    );
  });

  it('calls connected tools on their servers with the token from the environment, and the others through the runtime', async () => {
    await files.control('drop-sessions');
    await files.control('reset');
    await files.control('require-bearer', { token: TOKEN });
    const generated = moduleOf('connected');
    const runtime = recordingRuntime();
    const mcp = generated.connectMcpServers!(runtime, { env: { MCP_SERVER_FILES_TOKEN: TOKEN } });
    try {
      const state = await generated.buildWorkflow(mcp).invoke(generated.initialState('hello'));
      expect(state.vars).toMatchObject({
        read: 'echo: hello',
        who: `Bearer ${TOKEN}`,
        look: 'found {"found":"echo: hello"}',
      });
      // The runtime saw the service's own tool and the agent, whose request names the connected tools it may use.
      expect(runtime.calls).toEqual([
        { tool: { node: 'look', tool: 'lookup', args: { found: 'echo: hello' } } },
        expect.objectContaining({
          agent: expect.objectContaining({ tools: ['relay__echo', 'local__echo', 'lookup'] }) as unknown,
        }),
      ]);
      expect(await files.control('calls')).toEqual({ echo: 1, whoami: 1 });
      // One client per server, connected once and reused: one session for both calls and the listing.
      expect(await mcp.listTools(['files__echo', 'files__who_am_i', 'lookup', 'files__nothing'])).toEqual([
        expect.objectContaining({ name: 'files__echo', description: 'Echoes the text back.' }),
        expect.objectContaining({
          name: 'files__who_am_i',
          description: 'Returns the Authorization header it received.',
        }),
      ]);
      expect(await files.control('sessions')).toHaveLength(1);
      // A failing tool fails the call, naming the node.
      await expect(mcp.callTool({ node: 'n', tool: 'files__add', args: {} }, {})).rejects.toThrow(
        /The tool files__add failed in node n: .*Input validation error/,
      );
      // Over SSE, the same.
      expect(await mcp.callTool({ node: 'relay', tool: 'relay__echo', args: { message: 'over sse' } }, {})).toBe(
        'Echo: over sse',
      );
    } finally {
      await mcp.close();
    }
    // Closing ends the session on the server.
    expect(await files.control('sessions')).toHaveLength(0);
  });

  it('reads the URL and token from options before the environment, and fails clearly without them', async () => {
    const generated = moduleOf('connected');
    const call = async (options: McpOptions, tool = 'files__echo', args: Record<string, unknown> = { text: 'x' }) => {
      const mcp = generated.connectMcpServers!(recordingRuntime(), options);
      try {
        return await mcp.callTool({ node: 'n', tool, args }, {});
      } finally {
        await mcp.close();
      }
    };
    await files.control('require-bearer', { token: TOKEN });
    // No token: the upstream refuses, and the error says which server could not be reached.
    await expect(call({ env: {} })).rejects.toThrow(/Could not connect to the MCP server Files "docs"/);
    // The URL variable wins over the URL known at generation; options win over both.
    const nowhere = 'http://127.0.0.1:9/mcp';
    await expect(call({ env: { MCP_SERVER_FILES_URL: nowhere, MCP_SERVER_FILES_TOKEN: TOKEN } })).rejects.toThrow(
      /Could not connect/,
    );
    expect(
      await call({
        env: { MCP_SERVER_FILES_URL: nowhere, MCP_SERVER_FILES_TOKEN: 'wrong' },
        servers: { files: { url: files.url, token: TOKEN } },
      }),
    ).toBe('echo: x');
    // A stdio server's command is the operator's: without it, the error names the variable to set.
    await expect(call({ env: {} }, 'local__echo')).rejects.toThrow(
      'Local runs over stdio: set MCP_SERVER_LOCAL_COMMAND to the command that starts it',
    );
    // Given one, the generated code starts the server and calls its tool (server-everything's echo).
    const { command, args } = everythingStdioCommand();
    const local = { MCP_SERVER_LOCAL_COMMAND: [command, ...args].join(' ') };
    expect(await call({ env: local }, 'local__echo', { message: 'over stdio' })).toBe('Echo: over stdio');
  }, 60_000);

  it('writes code Prettier leaves as it is', async () => {
    const prettier = await import('prettier');
    for (const [key, [, code]] of Object.entries(sources)) {
      const formatted = await prettier.format(code, { parser: 'typescript' });
      expect(formatted, key).toBe(code);
    }
  });
});

describe('generated code', () => {
  it('is named after the module name, in each language', () => {
    expect(generateCode(SUPPORT, { language: 'python', name: 'Research flow' }).filename).toBe('research_flow.py');
    expect(generateCode(SUPPORT, { language: 'typescript', name: 'Research flow' }).filename).toBe('research-flow.ts');
    expect(generateCode(SUPPORT, { language: 'typescript' }).filename).toBe('support-desk-flow.ts');
    expect(generateCode(SUPPORT, { language: 'python', name: '2nd Übersicht' }).filename).toBe(
      'workflow_2nd_ubersicht.py',
    );
    const generated = generateCode(SUPPORT, { language: 'typescript', name: 'Research flow' });
    expect(generated.language).toBe('typescript');
    expect(generated.code).toMatch(
      /^\/\*\*\n \* research-flow: the workflow "Support "desk" flow" as a LangGraph graph\./,
    );
    expect(generatePython(SUPPORT)).toMatch(/^"""support_desk_flow: the workflow "Support "desk" flow" as a/);
  });

  it('refuses, as compileWorkflow does, a workflow no graph can express', () => {
    const broken = workflow(
      'broken',
      [
        { id: 'start', type: 'start' },
        { id: 'r', type: 'router' },
      ],
      [['start', 'r']],
    );
    expect(() => generateTypeScript(broken)).toThrow(WorkflowCompileError);
    expect(() => generatePython(broken)).toThrow(/router "r" has 0 edges without a condition/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Python: parsed by Python itself, checked by pyflakes, its graph compared with the plan, and its routing and
// argument filling run against a stand-in for the langgraph package (LangGraph for Python is not installed here).

const PYTHON = '/usr/bin/python3';

function probePython(): Availability {
  const probe = spawnSync(PYTHON, ['-m', 'pyflakes', '--version'], { encoding: 'utf8' });
  if (probe.status === 0) return { available: true, reason: '' };
  return {
    available: false,
    reason:
      `${PYTHON} -m pyflakes is not available (apt-get install python3-pyflakes): ${probe.stderr || probe.error?.message || ''}`.trim(),
  };
}

/** Reads a module's syntax tree in Python: its top-level functions and the graph calls in `build_workflow`. */
const SUMMARIZE = `
import ast, json, sys
tree = ast.parse(sys.stdin.read())
defs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
calls = []
for node in ast.walk(tree):
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == "graph":
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Constant):
                args.append(arg.value)
            elif isinstance(arg, ast.Name):
                args.append({"name": arg.id})
            elif isinstance(arg, ast.Lambda):
                args.append({"lambda": arg.body.func.id})
            else:
                args.append(ast.literal_eval(arg))
        calls.append([node.func.attr, args])
print(json.dumps({"defs": defs, "calls": calls}))
`;

/** A stand-in `langgraph` package that records the graph and answers `interrupt` with a fixed answer. */
const STUB: Record<string, string> = {
  'langgraph/__init__.py': '',
  'langgraph/graph.py': `
START = "__start__"
END = "__end__"

class StateGraph:
    def __init__(self, schema):
        self.nodes, self.edges, self.branches = {}, [], {}

    def add_node(self, name, fn):
        self.nodes[name] = fn

    def add_edge(self, source, target):
        self.edges.append((source, target))

    def add_conditional_edges(self, source, route, targets):
        self.branches[source] = (route, targets)

    def compile(self, checkpointer=None):
        return self

    def with_config(self, **config):
        self.config = config
        return self
`,
  'langgraph/types.py': `
RESUME = "answer"


def interrupt(value):
    return RESUME
`,
  // The \`mcp\` package's client API (1.x) as the generated module uses it; it records what it is asked in LOG.
  'mcp/__init__.py': `
import contextlib
import json
import types

LOG = []


class StdioServerParameters:
    def __init__(self, command, args=None, env=None):
        self.command, self.args = command, args or []


class ClientSession:
    def __init__(self, read_stream, write_stream):
        self.server = read_stream

    async def __aenter__(self):
        LOG.append(["open", self.server["url"]])
        return self

    async def __aexit__(self, *exc_info):
        LOG.append(["close", self.server["url"]])

    async def initialize(self):
        if "refused" in str(self.server["url"]):
            raise ConnectionError("refused")

    async def call_tool(self, name, arguments=None):
        LOG.append(["call", self.server["url"], name, arguments])
        text = json.dumps([name, arguments, self.server["headers"]], separators=(",", ":"))
        return types.SimpleNamespace(
            content=[
                types.SimpleNamespace(type="text", text=text),
                types.SimpleNamespace(type="image", data="", mimeType="image/png"),
            ],
            isError=name == "fail",
        )

    async def list_tools(self, cursor=None):
        def tool(name):
            return types.SimpleNamespace(name=name, description=name + "!", inputSchema={"type": "object"})

        if cursor is None:
            return types.SimpleNamespace(tools=[tool("echo"), tool("add")], nextCursor="2")
        return types.SimpleNamespace(tools=[tool("whoami")], nextCursor=None)


@contextlib.asynccontextmanager
async def connect(kind, url, headers, streams):
    LOG.append(["connect", kind, url, headers])
    server = {"url": url, "headers": headers}
    yield (server, None, lambda: None)[:streams]
`,
  'mcp/client/__init__.py': '',
  'mcp/client/streamable_http.py': `
from mcp import connect


def streamablehttp_client(url, headers=None, timeout=30, sse_read_timeout=300):
    return connect("streamable_http", url, headers, 3)
`,
  'mcp/client/sse.py': `
from mcp import connect


def sse_client(url, headers=None, timeout=5, sse_read_timeout=300):
    return connect("sse", url, headers, 2)
`,
  'mcp/client/stdio.py': `
from mcp import StdioServerParameters, connect


def stdio_client(server):
    assert isinstance(server, StdioServerParameters)
    return connect("stdio", [server.command, *server.args], None, 2)
`,
};

/** Loads a generated module with the stand-in, routes each scope and calls each tool node; prints JSON. */
const DRIVE = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("generated", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

class Runtime:
    def __init__(self):
        self.calls = []
    def agent(self, **request):
        return "agent answer"
    def call_tool(self, **request):
        self.calls.append(request)
        return "tool result"

runtime = Runtime()
graph = module.build_workflow(runtime)
cases = json.load(sys.stdin)
out = {"recursion_limit": graph.config["recursion_limit"], "routes": [], "tools": []}
for case in cases:
    state = module.initial_state(case["input"], case["vars"])
    out["routes"].append({source: route(state) for source, (route, _) in graph.branches.items()})
    for name, fn in graph.nodes.items():
        update = fn(state)
        if name in case.get("tools", []):
            out["tools"].append([runtime.calls[-1]["args"], update])
print(json.dumps(out))
`;

describeWithService('generated Python', probePython(), () => {
  const dir = path.join(ROOT, 'test', '.generated', randomBytes(6).toString('hex'));
  const python = (args: string[], input: string) =>
    execFileSync(PYTHON, args, { input, encoding: 'utf8', env: { ...process.env, PYTHONPATH: dir } });

  beforeAll(() => {
    for (const [file, source] of Object.entries(STUB)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), source);
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const tools = connectedTools({ files: 'http://127.0.0.1:4000/mcp', relay: 'https://relay.example.com/sse' });
  const write = (wf: Workflow, name: string) => {
    const { filename, code } = generateCode(wf, { language: 'python', name, tools });
    const file = path.join(dir, filename);
    writeFileSync(file, code);
    return { file, code };
  };

  it.each([
    ['support', SUPPORT],
    ['proto', PROTO],
    ['colliding', COLLIDING],
    ['chain', CHAIN],
    ['connected', CONNECTED],
  ])('%s: parses, pleases pyflakes, and builds the planned graph with one function per node', (name, wf) => {
    const { file, code } = write(wf, name);
    const summary = JSON.parse(python(['-c', SUMMARIZE], code)) as {
      defs: string[];
      calls: [string, (string | { name: string } | { lambda: string } | string[])[]][];
    };
    const lint = spawnSync(PYTHON, ['-m', 'pyflakes', file], { encoding: 'utf8' });
    expect(lint.stdout + lint.stderr).toBe('');
    expect(lint.status).toBe(0);

    const plan = planWorkflow(wf);
    const added = summary.calls.filter(([method]) => method === 'add_node').map(([, args]) => args);
    expect(added.map(([id]) => id)).toEqual(plan.nodes.map((n) => n.id));
    const functions = added.map(([, fn]) =>
      typeof fn === 'object' && 'name' in fn ? fn.name : (fn as { lambda: string }).lambda,
    );
    expect(new Set(functions).size).toBe(plan.nodes.length);
    for (const fn of functions) expect(summary.defs).toContain(fn);
    expect(summary.defs.filter((d) => d.endsWith('_node') || /_node_\d+$/.test(d))).toHaveLength(plan.nodes.length);

    const edges = summary.calls.filter(([method]) => method === 'add_edge').map(([, args]) => args);
    expect(edges).toEqual([
      [{ name: 'START' }, plan.start],
      ...plan.edges,
      ...plan.nodes.filter((n) => n.type === 'end').map((n) => [n.id, { name: 'END' }]),
    ]);
    const branches = summary.calls
      .filter(([method]) => method === 'add_conditional_edges')
      .map(([, [id, , targets]]) => [id, targets]);
    expect(branches).toEqual(
      [...plan.routers].map(([id, r]) => [id, [...new Set([...r.branches.map((b) => b.target), r.fallback])]]),
    );
  });

  it('keeps to PEP 8 line lengths (79 columns) where the text allows', () => {
    for (const [name, wf] of [
      ['colliding', COLLIDING],
      ['chain', CHAIN],
      ['proto', PROTO],
      ['connected', CONNECTED],
    ] as const) {
      const { code } = write(wf, name);
      expect(code.split('\n').filter((l) => l.length > 79)).toEqual([]);
    }
  });

  it('leaves the MCP client out of a module without connected tools', () => {
    for (const [name, wf] of [
      ['support', SUPPORT],
      ['chain', CHAIN],
    ] as const) {
      const { code } = write(wf, name);
      expect(code).not.toMatch(/\bmcp\b|MCP_SERVER|McpRuntime|asyncio|threading/);
    }
  });

  it('reaches connected servers through the mcp client, by URL and token variables, with no credential', () => {
    const { file, code } = write(CONNECTED, 'connected');
    execFileSync(PYTHON, ['-m', 'py_compile', file]);
    expect(code.replace(/\n/g, ' ')).toContain(`\`\`${MCP_PYTHON_REQUIREMENT}\`\` for its connected tools`);
    for (const line of [
      'from mcp import ClientSession, StdioServerParameters',
      'from mcp.client.sse import sse_client',
      'from mcp.client.stdio import stdio_client',
      'from mcp.client.streamable_http import streamablehttp_client',
      '        "url_env": "MCP_SERVER_FILES_URL",',
      '        "token_env": "MCP_SERVER_FILES_TOKEN",',
      '        "command_env": "MCP_SERVER_LOCAL_COMMAND",',
      '        "tools": {"files__echo": "echo", "files__who_am_i": "whoami"},',
      '        token = settings.get("token") or self._env.get(server["token_env"])',
      '        headers = {"Authorization": f"Bearer {token}"} if token else None',
    ])
      expect(code).toContain(line);
    expect(code).not.toContain('files__add');
  });

  it('calls connected tools through one session per server, and the others through the runtime', () => {
    const { file } = write(CONNECTED, 'connected');
    const script = `
import importlib.util, json, sys
import mcp
spec = importlib.util.spec_from_file_location("generated", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

class Runtime:
    def __init__(self):
        self.calls = []
    def agent(self, **request):
        self.calls.append(["agent", request["tools"]])
        return "agent answer"
    def call_tool(self, **request):
        self.calls.append(["tool", request["tool"], request["args"]])
        return "tool result"

out = []
for case in json.load(sys.stdin):
    mcp.LOG.clear()
    runtime = Runtime()
    result = {}
    with module.McpRuntime(runtime, servers=case.get("servers"), env=case["env"]) as tools:
        graph = module.build_workflow(tools)
        state = module.initial_state("hello")
        for name in ["read", "who", "look", "relay"]:
            state["vars"].update(graph.nodes[name](state)["vars"])
        result["vars"] = state["vars"]
        for tool in ["files__fail", "local__echo"]:
            try:
                result[tool] = tools.call_tool(node="n", tool=tool, args={})
            except Exception as error:
                result[tool] = type(error).__name__ + ": " + str(error)
        result["tools"] = tools.list_tools(["files__echo", "files__who_am_i", "lookup"])
    result["runtime"] = runtime.calls
    result["log"] = list(mcp.LOG)
    out.append(result)
print(json.dumps(out))
`;
    const cases = [
      { env: { MCP_SERVER_FILES_TOKEN: TOKEN } },
      {
        env: { MCP_SERVER_FILES_URL: 'http://files.internal/mcp', MCP_SERVER_LOCAL_COMMAND: 'serve-local --quiet' },
        servers: { files: { token: 'given' } },
      },
    ];
    type Result = { vars: Record<string, string>; runtime: unknown[]; log: unknown[] } & Record<string, unknown>;
    const [first, second] = JSON.parse(python(['-W', 'error', '-c', script, file], JSON.stringify(cases))) as Result[];
    const files = 'http://127.0.0.1:4000/mcp';
    const bearer = { Authorization: `Bearer ${TOKEN}` };
    expect(first?.vars).toMatchObject({
      read: JSON.stringify(['echo', { text: 'hello' }, bearer]),
      who: JSON.stringify(['whoami', {}, bearer]),
      look: 'tool result',
      relay: 'agent answer',
    });
    expect(first?.runtime).toEqual([
      ['tool', 'lookup', { found: JSON.stringify(['echo', { text: 'hello' }, bearer]) }],
      ['agent', ['relay__echo', 'local__echo', 'lookup']],
    ]);
    expect(first?.files__fail).toMatch(/^RuntimeError: the tool files__fail failed in node n: \["fail"/);
    expect(first?.local__echo).toBe(
      'RuntimeError: Local runs over stdio: set MCP_SERVER_LOCAL_COMMAND to the command that starts it',
    );
    expect(first?.tools).toEqual([
      { name: 'files__echo', description: 'echo!', input_schema: { type: 'object' } },
      { name: 'files__who_am_i', description: 'whoami!', input_schema: { type: 'object' } },
    ]);
    // One session for every call to the server, opened on first use and closed with the runtime.
    expect(first?.log).toEqual([
      ['connect', 'streamable_http', files, bearer],
      ['open', files],
      ['call', files, 'echo', { text: 'hello' }],
      ['call', files, 'whoami', {}],
      ['call', files, 'fail', {}],
      ['close', files],
    ]);
    // The URL variable wins over the URL known at generation, a setting given in code over a variable; a stdio
    // server runs the operator's command.
    expect(second?.log).toEqual(
      expect.arrayContaining([
        ['connect', 'streamable_http', 'http://files.internal/mcp', { Authorization: 'Bearer given' }],
        ['connect', 'stdio', ['serve-local', '--quiet'], null],
        ['call', ['serve-local', '--quiet'], 'echo', {}],
      ]),
    );
    expect(second?.local__echo).toBe(JSON.stringify(['echo', {}, null]));
  });

  it('routes on conditions as the expression interpreter evaluates them', () => {
    const { file } = write(CHAIN, 'chain');
    const out = JSON.parse(python(['-c', DRIVE, file], JSON.stringify(SCOPES))) as {
      recursion_limit: number;
      routes: Record<string, string>[];
    };
    expect(out.recursion_limit).toBe(100);
    SCOPES.forEach((scope, i) => {
      const routes = out.routes[i] ?? {};
      expect(CONDITIONS.map((_, c) => routes[`c${c}`])).toEqual(expectedBranches(scope));
    });
  });

  it('fills tool arguments as fillArgs does, hostile text and an own __proto__ key included', () => {
    for (const [name, wf, node] of [
      ['support', SUPPORT, 'look-up'],
      ['proto', PROTO, 'call_it'],
    ] as const) {
      const { file } = write(wf, name);
      const scope = { input: 'Where?', vars: { review: 'again', 'draft-reply': HOSTILE } };
      const out = JSON.parse(python(['-c', DRIVE, file], JSON.stringify([{ ...scope, tools: [node] }]))) as {
        tools: [Record<string, unknown>, { vars: Record<string, unknown>; messages: unknown[] }][];
      };
      const args = (wf.nodes.find((n) => n.id === node)?.data as { args: Record<string, unknown> }).args;
      const [filled, update] = out.tools[0] ?? [];
      const values = scopeOf({
        input: scope.input,
        messages: [{ role: 'user', content: scope.input }],
        vars: scope.vars,
      });
      expect(filled).toEqual(fillArgs(args, values));
      expect(update?.vars).toEqual({ [node]: 'tool result', output: 'tool result' });
    }
  });

  it('reads resume values and refuses answers as the service does', () => {
    const { file, code } = write(SUPPORT, 'support');
    expect(code.replace(/\n/g, ' ')).toContain(`It needs \`\`${LANGGRAPH_PYTHON_REQUIREMENT}\`\``);
    const script = `
import importlib.util, json, sys
import langgraph.types
spec = importlib.util.spec_from_file_location("generated", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
cases = json.load(sys.stdin)
read = []
for resume in cases["resumes"]:
    langgraph.types.RESUME = resume
    read.append(module.review_node(module.initial_state("x"))["vars"]["review"])
taken = []
for answer in cases["answers"]:
    try:
        taken.append(module.human_answer(answer))
    except (TypeError, ValueError) as error:
        taken.append(type(error).__name__)
print(json.dumps({"read": read, "taken": taken, "max": module.ANSWER_MAX_LENGTH}))
`;
    const out = JSON.parse(
      python(['-c', script, file], JSON.stringify({ resumes: RESUME_VALUES, answers: ANSWERS })),
    ) as {
      read: string[];
      taken: unknown[];
      max: number;
    };
    expect(out.max).toBe(20_000);
    expect(out.read).toEqual(RESUME_VALUES.map(answerOf));
    expect(out.taken).toEqual(
      ANSWERS.map((answer) =>
        HumanAnswer.safeParse(answer).success
          ? humanResume(answer as string)
          : typeof answer === 'string'
            ? 'ValueError'
            : 'TypeError',
      ),
    );
  });

  it('keeps hostile text exact in its string literals', () => {
    const { file } = write(SUPPORT, 'support');
    const literal = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("generated", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
class Runtime:
    def agent(self, **request):
        print(json.dumps(request["system_prompt"]))
        return "x"
graph = module.build_workflow(Runtime())
graph.nodes["draft-reply"](module.initial_state("x"))
print(json.dumps(graph.nodes["review"](module.initial_state("x"))))
`;
    const [prompt, review] = python(['-c', literal, file], '').trim().split('\n');
    expect(JSON.parse(prompt ?? '')).toBe(HOSTILE);
    expect(JSON.parse(review ?? '')).toMatchObject({ vars: { review: 'answer' } });
  });
});
