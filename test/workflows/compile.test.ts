import { randomUUID } from 'node:crypto';
import { type BaseCheckpointSaver, Command, GraphRecursionError, MemorySaver } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { describe, expect, it } from 'vitest';
import { createOfflineLlm } from '../../src/adapters/llm/offline.js';
import { type CompiledWorkflow, compileWorkflow } from '../../workflows/compile.js';
import {
  type NodeEvent,
  RECURSION_LIMIT,
  WorkflowCompileError,
  initialState,
  planWorkflow,
} from '../../workflows/plan.js';
import type { ToolRequest, WorkflowRuntime } from '../../workflows/runtime.js';
import { type Workflow, parseWorkflow } from '../../workflows/schema.js';

// Agent nodes answer with the real offline model. Tools are in-process functions here: a small table standing in
// for the MCP tools the service's runtime would call.
const TOOLS: Record<string, (args: Record<string, unknown>) => string> = {
  classify: (args) => (String(args.text).trim().endsWith('?') ? 'question' : 'statement'),
  lookup: (args) => `3 results for ${JSON.stringify(args.query)}`,
};

function testRuntime(): WorkflowRuntime & { toolCalls: ToolRequest[] } {
  const llm = createOfflineLlm();
  const toolCalls: ToolRequest[] = [];
  let count = 0;
  return {
    toolCalls,
    async agent(request) {
      const messages = [
        { role: 'system' as const, content: request.systemPrompt },
        ...request.messages.map(({ role, content }) => ({ role, content })),
      ];
      return (await llm.complete({ messages })).text;
    },
    callTool(request) {
      toolCalls.push(request);
      // `count` answers how many times it was called, so loops can stop on it.
      if (request.tool === 'count') return Promise.resolve(String(++count));
      const tool = TOOLS[request.tool];
      if (!tool) return Promise.reject(new Error(`no tool ${request.tool}`));
      return Promise.resolve(tool(request.args));
    },
  };
}

type NodeSpec = { id: string; type: string; data?: Record<string, unknown> };
type EdgeSpec = [source: string, target: string, condition?: string];

/** A workflow from nodes and `[source, target, condition?]` edges, through the real schema. */
function workflow(nodes: NodeSpec[], edges: EdgeSpec[]): Workflow {
  return parseWorkflow({
    name: 'Test flow',
    nodes,
    edges: edges.map(([source, target, condition], i) => ({
      id: `e${i + 1}`,
      source,
      target,
      ...(condition !== undefined && { data: { condition } }),
    })),
  });
}

const START_NODE = { id: 'start', type: 'start' };
const END_NODE = { id: 'end', type: 'end' };
const thread = () => ({ configurable: { thread_id: randomUUID() } });

const CHECKPOINTERS: [string, () => BaseCheckpointSaver][] = [
  ['MemorySaver', () => new MemorySaver()],
  ['SqliteSaver', () => SqliteSaver.fromConnString(':memory:')],
];

describe.each(CHECKPOINTERS)('compileWorkflow on %s', (_name, checkpointer) => {
  const compile = (wf: Workflow, runtime: WorkflowRuntime = testRuntime()): CompiledWorkflow =>
    compileWorkflow(wf, runtime, { checkpointer: checkpointer() });

  it('runs a linear agent workflow: the answer is in the transcript, under its id and as output', async () => {
    const wf = workflow(
      [START_NODE, { id: 'writer', type: 'agent', data: { system_prompt: 'Write briefly.' } }, END_NODE],
      [
        ['start', 'writer'],
        ['writer', 'end'],
      ],
    );
    const state = await compile(wf).invoke(initialState('Hello there'), thread());

    const answer = state.vars.writer;
    expect(answer).toMatch(/^Offline model: you said "Hello there"\. I see 0 earlier messages/);
    expect(state.path).toEqual(['start', 'writer', 'end']);
    expect(state.vars).toEqual({ writer: answer, output: answer });
    expect(state.messages).toEqual([
      { role: 'user', content: 'Hello there' },
      { role: 'assistant', content: answer, node: 'writer' },
    ]);
  });

  describe('a router', () => {
    // The agent answers first; its answer quotes the input, so the first router escalates when it mentions
    // "urgent". Otherwise the classify tool runs, and the second router sends questions to a reply.
    const wf = workflow(
      [
        START_NODE,
        { id: 'answer', type: 'agent', data: { system_prompt: 'Answer the question.' } },
        { id: 'triage', type: 'router' },
        { id: 'escalated', type: 'end' },
        { id: 'classify', type: 'tool', data: { tool: 'classify', args: { text: '{{ input }}' } } },
        { id: 'kind', type: 'router' },
        { id: 'reply', type: 'end' },
        END_NODE,
      ],
      [
        ['start', 'answer'],
        ['answer', 'triage'],
        ['triage', 'escalated', 'state.answer contains "urgent"'],
        ['triage', 'classify'],
        ['classify', 'kind'],
        ['kind', 'reply', 'classify == "question"'],
        ['kind', 'end'],
      ],
    );

    it.each([
      ['Is it urgent?', ['start', 'answer', 'triage', 'escalated'], undefined],
      ['Is it fine?', ['start', 'answer', 'triage', 'classify', 'kind', 'reply'], 'question'],
      ['It is fine.', ['start', 'answer', 'triage', 'classify', 'kind', 'end'], 'statement'],
    ])('takes the branch whose condition holds for %j, else its default', async (input, path, kind) => {
      const state = await compile(wf).invoke(initialState(input), thread());
      expect(state.path).toEqual(path);
      expect(state.vars.classify).toBe(kind);
      expect(state.vars.output).toBe(kind ?? state.vars.answer);
    });

    it('takes the first of several branches whose conditions hold, in edge order', async () => {
      const both = workflow(
        [
          START_NODE,
          { id: 'r', type: 'router' },
          { id: 'first', type: 'end' },
          { id: 'second', type: 'end' },
          END_NODE,
        ],
        [
          ['start', 'r'],
          ['r', 'second', 'flag'],
          ['r', 'first', 'flag and n > 1'],
          ['r', 'end'],
        ],
      );
      const state = await compile(both).invoke(initialState('x', { flag: true, n: 2 }), thread());
      expect(state.path).toEqual(['start', 'r', 'second']);
    });
  });

  it('fills tool arguments from the run state: raw values, text, nested ones; a bad template stays as written', async () => {
    const runtime = testRuntime();
    const wf = workflow(
      [
        START_NODE,
        {
          id: 'search',
          type: 'tool',
          data: {
            tool: 'lookup',
            args: {
              query: '{{ input }}',
              limit: '{{ limit }}',
              note: 'for {{input}} (at most {{ limit }}, {{ tags }})',
              nested: { list: ['{{ missing }}', 'plain', 2] },
              bad: '{{ unclosed',
            },
          },
        },
        END_NODE,
      ],
      [
        ['start', 'search'],
        ['search', 'end'],
      ],
    );
    const state = await compile(wf, runtime).invoke(initialState('cats', { limit: 5, tags: ['a', 'b'] }), thread());

    expect(runtime.toolCalls).toEqual([
      {
        node: 'search',
        tool: 'lookup',
        args: {
          query: 'cats',
          limit: 5,
          note: 'for cats (at most 5, ["a","b"])',
          nested: { list: [null, 'plain', 2] },
          bad: '{{ unclosed',
        },
      },
    ]);
    expect(state.vars).toMatchObject({ search: '3 results for "cats"', output: '3 results for "cats"' });
    expect(state.messages.at(-1)).toEqual({
      role: 'user',
      content: 'Result of lookup: 3 results for "cats"',
      node: 'search',
    });
  });

  it('pauses at a human node with its question and goes on with the answer', async () => {
    const wf = workflow(
      [START_NODE, { id: 'approve', type: 'human', data: { question: 'Ship it?' } }, END_NODE],
      [
        ['start', 'approve'],
        ['approve', 'end'],
      ],
    );
    const graph = compile(wf);
    const config = thread();
    await graph.invoke(initialState('release 2.8'), config);

    const paused = await graph.getState(config);
    expect(paused.next).toEqual(['approve']);
    expect(paused.tasks[0]?.interrupts[0]?.value).toEqual({ node: 'approve', question: 'Ship it?' });
    expect((paused.values as { path: string[] }).path).toEqual(['start']);

    const state = await graph.invoke(new Command({ resume: 'yes' }), config);
    expect(state.path).toEqual(['start', 'approve', 'end']);
    expect(state.vars).toEqual({ approve: 'yes' });
    expect(state.messages.at(-1)).toEqual({ role: 'user', content: 'yes', node: 'approve' });
    expect((await graph.getState(config)).next).toEqual([]);
  });

  it('asks the default question when a human node has none, and reads a non-text answer as text', async () => {
    const wf = workflow(
      [START_NODE, { id: 'ask', type: 'human' }, END_NODE],
      [
        ['start', 'ask'],
        ['ask', 'end'],
      ],
    );
    const graph = compile(wf);
    const config = thread();
    await graph.invoke(initialState('x'), config);
    expect((await graph.getState(config)).tasks[0]?.interrupts[0]?.value).toEqual({
      node: 'ask',
      question: 'How should the workflow go on?',
    });
    const state = await graph.invoke(new Command({ resume: { approved: true } }), config);
    expect(state.vars.ask).toBe('{"approved":true}');
  });

  it('loops through a router for as long as the human answers "again"', async () => {
    const wf = workflow(
      [
        START_NODE,
        { id: 'draft', type: 'agent', data: { system_prompt: 'Draft a reply.' } },
        { id: 'check', type: 'human', data: { question: 'Again, or ok?' } },
        { id: 'decide', type: 'router' },
        END_NODE,
      ],
      [
        ['start', 'draft'],
        ['draft', 'check'],
        ['check', 'decide'],
        ['decide', 'draft', 'check == "again"'],
        ['decide', 'end'],
      ],
    );
    const graph = compile(wf);
    const config = thread();
    await graph.invoke(initialState('Reply to Bob'), config);
    for (const answer of ['again', 'again']) {
      await graph.invoke(new Command({ resume: answer }), config);
      expect((await graph.getState(config)).tasks[0]?.interrupts[0]?.value).toEqual({
        node: 'check',
        question: 'Again, or ok?',
      });
    }
    const state = await graph.invoke(new Command({ resume: 'ok' }), config);

    const round = ['draft', 'check', 'decide'];
    expect(state.path).toEqual(['start', ...round, ...round, ...round, 'end']);
    expect(state.vars.check).toBe('ok');
    expect(state.messages.filter((m) => m.node === 'draft')).toHaveLength(3);
    expect(state.messages.filter((m) => m.node === 'check').map((m) => m.content)).toEqual(['again', 'again', 'ok']);
  });

  it('streams node events through the custom stream, the human node starting again on resume', async () => {
    const wf = workflow(
      [START_NODE, { id: 'writer', type: 'agent' }, { id: 'ok', type: 'human' }, END_NODE],
      [
        ['start', 'writer'],
        ['writer', 'ok'],
        ['ok', 'end'],
      ],
    );
    const graph = compile(wf);
    const config = thread();
    const collect = async (input: Parameters<CompiledWorkflow['stream']>[0]) => {
      const events: NodeEvent[] = [];
      for await (const chunk of await graph.stream(input, { ...config, streamMode: 'custom' })) {
        events.push(chunk as NodeEvent);
      }
      return events.map((e) => `${e.type} ${e.node} ${e.node_type}`);
    };

    expect(await collect(initialState('hi'))).toEqual([
      'node_started start start',
      'node_finished start start',
      'node_started writer agent',
      'node_finished writer agent',
      'node_started ok human',
    ]);
    expect(await collect(new Command({ resume: 'fine' }))).toEqual([
      'node_started ok human',
      'node_finished ok human',
      'node_started end end',
      'node_finished end end',
    ]);
  });

  it(`allows loops of more than LangGraph's default 25 steps, and stops an endless one after ${RECURSION_LIMIT}`, async () => {
    const counting = (condition: string) =>
      workflow(
        [START_NODE, { id: 'tick', type: 'tool', data: { tool: 'count' } }, { id: 'more', type: 'router' }, END_NODE],
        [
          ['start', 'tick'],
          ['tick', 'more'],
          ['more', 'tick', condition],
          ['more', 'end'],
        ],
      );
    const state = await compile(counting('tick != "15"')).invoke(initialState('go'), thread());
    expect(state.vars.tick).toBe('15');
    expect(state.path).toHaveLength(1 + 15 * 2 + 1);

    const runtime = testRuntime();
    await expect(compile(counting('true'), runtime).invoke(initialState('go'), thread())).rejects.toThrow(
      GraphRecursionError,
    );
    expect(runtime.toolCalls.length).toBeLessThan(RECURSION_LIMIT);
    expect(runtime.toolCalls.length).toBeGreaterThan(RECURSION_LIMIT / 2 - 2);
  });

  it('leaves out nodes the start cannot reach, isolated ones among them', async () => {
    const wf = workflow(
      [
        START_NODE,
        { id: 'lonely', type: 'agent' },
        { id: 'orphan', type: 'tool', data: { tool: 'lookup' } },
        { id: 'unreached', type: 'end' },
        END_NODE,
      ],
      [
        ['start', 'end'],
        ['orphan', 'unreached'],
      ],
    );
    const graph = compile(wf);
    expect(Object.keys(graph.nodes).sort()).toEqual(['__start__', 'end', 'start']);
    expect((await graph.invoke(initialState('x'), thread())).path).toEqual(['start', 'end']);
  });
});

describe('compileWorkflow refuses what no graph can express', () => {
  const refusals: [string, Workflow, RegExp][] = [
    ['no start node', workflow([END_NODE], []), /has no start node/],
    [
      'two start nodes',
      workflow([START_NODE, { id: 'again', type: 'start' }, END_NODE], [['start', 'end']]),
      /2 start nodes/,
    ],
    [
      'two nodes with one id',
      workflow([START_NODE, { id: 'end', type: 'agent' }, END_NODE], [['start', 'end']]),
      /two nodes have the id "end"/,
    ],
    [
      'an edge to a missing node',
      workflow([START_NODE, END_NODE], [['start', 'nowhere']]),
      /edge "e1" connects "start" to "nowhere", but there is no node "nowhere"/,
    ],
    [
      'a condition that does not parse',
      workflow(
        [START_NODE, { id: 'r', type: 'router' }, END_NODE],
        [
          ['start', 'r'],
          ['r', 'end', 'status = "done"'],
          ['r', 'end'],
        ],
      ),
      /the condition of edge "e2" \("status = \\"done\\""\) does not parse: Unexpected '=': compare with '==' at position 7/,
    ],
    [
      'a router without a default branch',
      workflow(
        [START_NODE, { id: 'r', type: 'router' }, END_NODE],
        [
          ['start', 'r'],
          ['r', 'end', 'done'],
        ],
      ),
      /router "r" has 0 edges without a condition/,
    ],
    [
      'a router with two default branches',
      workflow(
        [START_NODE, { id: 'r', type: 'router' }, END_NODE, { id: 'other', type: 'end' }],
        [
          ['start', 'r'],
          ['r', 'end'],
          ['r', 'other', '  '],
        ],
      ),
      /router "r" has 2 edges without a condition/,
    ],
    [
      'a node that is not a router leading two ways',
      workflow(
        [START_NODE, END_NODE, { id: 'other', type: 'end' }],
        [
          ['start', 'end'],
          ['start', 'other'],
        ],
      ),
      /start node "start" leads to end, other; only a router may choose/,
    ],
    [
      'an end node with an outgoing edge',
      workflow(
        [START_NODE, END_NODE, { id: 'after', type: 'agent' }],
        [
          ['start', 'end'],
          ['end', 'after'],
        ],
      ),
      /end node "end" has an outgoing edge/,
    ],
    [
      'a tool node without a tool',
      workflow(
        [START_NODE, { id: 'call', type: 'tool' }, END_NODE],
        [
          ['start', 'call'],
          ['call', 'end'],
        ],
      ),
      /tool node "call" names no tool/,
    ],
    [
      'a node id the run state uses',
      workflow(
        [START_NODE, { id: 'messages', type: 'agent' }, END_NODE],
        [
          ['start', 'messages'],
          ['messages', 'end'],
        ],
      ),
      /the node id "messages" is reserved/,
    ],
  ];

  it.each(refusals)('%s', (_case, wf, message) => {
    expect(() => compileWorkflow(wf, testRuntime())).toThrow(WorkflowCompileError);
    expect(() => compileWorkflow(wf, testRuntime())).toThrow(message);
    expect(() => planWorkflow(wf)).toThrow(message);
  });
});
