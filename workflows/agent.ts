import { needsOf } from '../src/ports/connected-tools.js';
import { AsyncLocalStorageProviderSingleton } from '@langchain/core/singletons';
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from '@langchain/langgraph';
import type {
  ChatMessage,
  CompletionRequest,
  LlmProvider,
  ToolCall,
  ToolSpec,
  Usage,
} from '../src/adapters/llm/port.js';
import type { Logger } from '../src/logger.js';
import type { ToolExecutor } from '../src/mcp/tools.js';
import type { Tracer } from '@opentelemetry/api';
import {
  type Agent,
  type AgentEvent,
  type AgentTurn,
  NO_TRACER,
  inModelSpan,
  inToolSpan,
  toUsage,
} from '../src/modules/agent/index.js';
import { subjectOf } from '../src/ports/subjects.js';
import { followSignals } from '../src/signals.js';
import { type ConversationsService, type NewMessage, toChatMessage } from '../src/modules/conversations/index.js';
import type { Checkpointer } from './checkpointer.js';

const SYSTEM_PROMPT =
  'You are the assistant of Agent Service. Answer clearly and concisely. When tools are offered, use them to look ' +
  'things up instead of guessing, and say which sources you used.';

const DEFAULT_MAX_STEPS = 6;
/** How many conversations' histories the agent keeps at hand (see `createAgent`); the oldest kept goes first. */
const KEPT_HISTORIES = 256;
const ZERO: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

const add = (a: Usage, b: Usage): Usage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

/** New messages to append (a node's), or the whole history to start over from (each turn's input). */
type MessagesUpdate = ChatMessage[] | { replace: ChatMessage[] };

/**
 * The conversation's state, checkpointed per conversation (thread = conversation id): the whole message history,
 * which each turn's input sets to the history its first model request was sent with; `steps` and `usage` are per
 * turn (each turn's input resets them).
 */
const AgentState = Annotation.Root({
  messages: Annotation<ChatMessage[], MessagesUpdate>({
    reducer: (a, b) => (Array.isArray(b) ? a.concat(b) : b.replace),
    default: () => [],
  }),
  steps: Annotation<number>(),
  usage: Annotation<Usage>(),
});
type State = typeof AgentState.State;
type Update = typeof AgentState.Update;

/** What nodes stream to the turn's caller through LangGraph's custom stream. */
type Emitted = Extract<AgentEvent, { type: 'delta' | 'tool_call' | 'tool_result' }>;

function resultText(result: { content?: unknown[] }): string {
  return (result.content ?? [])
    .map((part) => (typeof part === 'object' && part && 'text' in part ? String(part.text) : ''))
    .join('\n');
}

export interface AgentDeps {
  llm: LlmProvider;
  conversations: ConversationsService;
  tools: ToolExecutor;
  checkpointer: Checkpointer;
  logger: Logger;
  /** Records a span per model call and per tool call (none without one). */
  tracer?: Tracer;
}

/**
 * One call of the model, in its `chat <model>` span, gathering the answer as it streams. The deltas go to whoever
 * streams the call on (`streamTo`); those that come before are kept for it. The turn's first call is started before
 * the graph runs, and the model node of the graph's first step takes it over.
 */
class ModelCall {
  text = '';
  calls: ToolCall[] = [];
  /** The call's usage once the model has answered; rejects as the call failed. */
  readonly usage: Promise<Usage>;
  /** Settles once the model has sent something, or the call has ended. */
  readonly answering: Promise<void>;
  #kept: string[] = [];
  #emit: ((text: string) => void) | undefined;

  constructor(deps: AgentDeps, request: CompletionRequest, traceContext: AgentTurn['traceContext']) {
    let answered!: () => void;
    this.answering = new Promise((resolve) => (answered = resolve));
    const model = { provider: deps.llm.provider, model: deps.llm.model };
    this.usage = inModelSpan(
      deps.tracer ?? NO_TRACER,
      traceContext,
      model,
      async () => {
        let usage = ZERO;
        for await (const event of deps.llm.stream(request)) {
          answered();
          if (event.type === 'delta') {
            this.text += event.text;
            if (this.#emit) this.#emit(event.text);
            else this.#kept.push(event.text);
          } else if (event.type === 'tool_calls') this.calls = event.calls;
          else usage = event.usage;
        }
        return { usage };
      },
      request.signal,
    ).then(({ usage }) => usage);
    // Whoever streams the call on sees its failure; a call nobody took over fails quietly.
    this.usage.then(answered, answered);
  }

  /** The deltas that came and were not streamed on yet; they will not be again. */
  kept(): string[] {
    const kept = this.#kept;
    this.#kept = [];
    return kept;
  }

  /** Streams the call on: every delta not streamed yet goes to `emit`. Answers the call's usage once it ends. */
  streamTo(emit: (text: string) => void): Promise<Usage> {
    for (const text of this.kept()) emit(text);
    this.#emit = emit;
    return this.usage;
  }
}

/** The turn's first model call, sent before the graph runs, until the model node takes it over. */
class FirstCall {
  readonly call: ModelCall;
  #taken = false;
  readonly #abandon = new AbortController();

  constructor(deps: AgentDeps, turn: AgentTurn, request: CompletionRequest) {
    // The turn's stop stops the call too, with its reason: one signal for both (every signal made costs the turn
    // microseconds before its model is asked). Not released: the turn's signal lives no longer than the turn.
    followSignals(this.#abandon, [turn.signal]);
    this.call = new ModelCall(deps, { ...request, signal: this.#abandon.signal }, turn.traceContext);
  }

  /** The call, for the model node of the graph's first step; none after that. */
  take(): ModelCall | undefined {
    if (this.#taken) return undefined;
    this.#taken = true;
    return this.call;
  }

  /** Stops the call if no node took it over (the turn ended or failed before its model node ran). */
  abandon(): void {
    if (!this.#taken) this.#abandon.abort();
    this.#taken = true;
  }
}

/**
 * What a turn hands its run of the graph (`configurable.turn`): everything that differs from one turn to the next,
 * so that the graph itself is built once.
 */
interface TurnRun {
  turn: AgentTurn;
  tools: ToolSpec[];
  offered: ReadonlySet<string>;
  maxSteps: number;
  first: FirstCall;
}

function turnRunOf(config: LangGraphRunnableConfig): TurnRun {
  const run = (config.configurable as { turn?: TurnRun } | undefined)?.turn;
  if (!run) throw new Error('the agent graph runs only within a turn');
  return run;
}

/** What the model is asked at a step: the conversation after the system prompt, and the tools while the budget lasts. */
function modelRequest(
  messages: ChatMessage[],
  steps: number,
  run: Pick<TurnRun, 'turn' | 'tools' | 'maxSteps'>,
): CompletionRequest {
  const offerTools = run.tools.length > 0 && steps < run.maxSteps;
  return {
    messages: [{ role: 'system', content: SYSTEM_PROMPT }, ...messages],
    ...(offerTools && { tools: run.tools }),
    ...(run.turn.signal && { signal: run.turn.signal }),
  };
}

/** The graph, built once: the model node and the tool node in a loop, bounded by each turn's step budget. */
function buildGraph(deps: AgentDeps) {
  const emit = (config: LangGraphRunnableConfig, event: Emitted) => config.writer?.(event);
  const tracer = deps.tracer ?? NO_TRACER;

  const callModel = async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const run = turnRunOf(config);
    const request = modelRequest(state.messages, state.steps, run);
    // The first step's request is the one the turn sent already: the input replaces the history with the one it
    // was sent with.
    const call = (state.steps === 0 && run.first.take()) || new ModelCall(deps, request, run.turn.traceContext);
    const usage = await call.streamTo((text) => emit(config, { type: 'delta', text }));
    // A model may ask for tools it was not offered (past the step budget, or in chat mode); acting on that would
    // let it loop until the recursion limit fails the whole turn, so its text is the answer.
    const calls = request.tools ? call.calls : [];
    const reply: ChatMessage = { role: 'assistant', content: call.text, ...(calls.length > 0 && { toolCalls: calls }) };
    return { messages: [reply], steps: state.steps + 1, usage: add(state.usage, usage) };
  };

  const runTools = async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const { turn, offered } = turnRunOf(config);
    const last = state.messages.at(-1);
    const calls = last?.role === 'assistant' ? (last.toolCalls ?? []) : [];
    const results: ChatMessage[] = [];
    for (const call of calls) {
      emit(config, { type: 'tool_call', name: call.name, args: call.arguments });
      if (!offered.has(call.name)) {
        // Only this turn's offer may run: the executor would also run tools kept from the agent (agent_chat would
        // start a nested turn). The model learns it and can do without.
        const content = `The tool ${call.name} is not available here.`;
        emit(config, { type: 'tool_result', name: call.name, content, isError: true });
        results.push({ role: 'tool', content, toolCallId: call.id, name: call.name });
        continue;
      }
      const result = await inToolSpan(
        tracer,
        turn.traceContext,
        { name: call.name, callId: call.id },
        // Outside the agent's graph: a tool that runs a graph of its own (a published workflow) must not run as
        // the agent's subgraph, which would hand the agent its human step's interrupt.
        () =>
          AsyncLocalStorageProviderSingleton.getInstance().run(undefined as never, () =>
            deps.tools.execute(call.name, call.arguments, turn.caller, turn.signal ? { signal: turn.signal } : {}),
          ),
        turn.signal,
      );
      const content = resultText(result);
      const needs = needsOf(result);
      emit(config, {
        type: 'tool_result',
        name: call.name,
        content,
        isError: result.isError === true,
        ...(needs && { needs }),
      });
      results.push({ role: 'tool', content, toolCallId: call.id, name: call.name });
    }
    return { messages: results };
  };

  return new StateGraph(AgentState)
    .addNode('model', callModel)
    .addNode('tools', runTools)
    .addEdge(START, 'model')
    .addConditionalEdges(
      'model',
      (state: State) => {
        const last = state.messages.at(-1);
        return last?.role === 'assistant' && last.toolCalls?.length ? 'tools' : END;
      },
      ['tools', END],
    )
    .addEdge('tools', 'model')
    .compile({ checkpointer: deps.checkpointer });
}

/**
 * The agent as a LangGraph graph over the model and the MCP tools the caller may use. Each turn streams tokens and
 * tool events, is checkpointed under its conversation (so the next turn, on any instance, continues it), and is
 * recorded in the conversation with its token counts.
 *
 * A turn sends its first model request before the graph starts, and streams the model's first words itself: the
 * graph's per-turn set-up (reading the checkpoint, writing the input's, preparing the step) runs after them, while
 * the rest of the answer streams, instead of before the model is even asked. The graph is built once; each run gets
 * its turn (tools, signal, trace context, the first call) through its config. The input checkpoint is still written,
 * by the graph, before the turn can end.
 */
export function createAgent(deps: AgentDeps): Agent & { forget(conversationId: string): void } {
  const graph = buildGraph(deps);
  const messagesOf = async (threadId: string): Promise<ChatMessage[]> => {
    const tuple = await deps.checkpointer.getTuple({ configurable: { thread_id: threadId } });
    return (tuple?.checkpoint.channel_values as Partial<State> | undefined)?.messages ?? [];
  };
  // The history the last turn of each conversation answered here left behind. The next turn asks its model from it
  // instead of reading and reviving the checkpoint first (half a millisecond and more before the model is asked,
  // growing with the conversation), as long as the record holds as many messages: a conversation only grows, so
  // another instance's turn, or a stopped turn kept, makes the counts differ and the checkpoint is read as before.
  const histories = new Map<string, ChatMessage[]>();
  const keep = (conversationId: string, messages: ChatMessage[]) => {
    histories.delete(conversationId);
    if (histories.size >= KEPT_HISTORIES) histories.delete(histories.keys().next().value!);
    histories.set(conversationId, messages);
  };

  return {
    /** Lets go of a conversation's history (its checkpoints are deleted: a stopped turn kept, or erasure). */
    forget: (conversationId) => void histories.delete(conversationId),
    async *run(turn: AgentTurn): AsyncIterable<AgentEvent> {
      const subject = subjectOf(turn.caller);
      const conversation = turn.conversationId
        ? await deps.conversations.access(subject, turn.conversationId, 'owner')
        : await deps.conversations.create(subject, turn.message);
      yield { type: 'started', conversationId: conversation.id };

      const maxSteps = turn.maxSteps ?? DEFAULT_MAX_STEPS;
      const tools = turn.mode === 'agent' ? await deps.tools.agentSpecsFor(turn.caller) : [];
      const known = histories.get(conversation.id);
      const checkpointed = known?.length === conversation.messageCount ? known : await messagesOf(conversation.id);
      // A turn cancelled, failed or cut off by a restart after LangGraph checkpointed part of it (its user message,
      // a tool call not yet answered) was never recorded. The recorded conversation is the truth: the model must
      // not see such remains, and an unanswered tool call would make an OpenAI-compatible API refuse every later
      // turn of the conversation.
      const history =
        checkpointed.length === conversation.messageCount
          ? undefined
          : (await deps.conversations.messages(conversation.id)).map(toChatMessage);
      const userMessage: ChatMessage = { role: 'user', content: turn.message };
      const messages = [...(history ?? checkpointed), userMessage];
      const offer = { turn, tools, maxSteps };
      const first = new FirstCall(deps, turn, modelRequest(messages, 0, offer));
      const run: TurnRun = { ...offer, offered: new Set(tools.map((t) => t.name)), first };
      try {
        // The model's first words reach the caller before the graph's per-turn set-up (reading the checkpoint,
        // writing the input's) takes the thread; the graph's model node then takes the call over where it is.
        await first.call.answering;
        for (const text of first.call.kept()) yield { type: 'delta', text };
        // Cancelled as those went out: the turn ends as the model call does, with its AbortError.
        if (turn.signal?.aborted) await first.call.usage;
        const stream = await graph.stream(
          // The history the first request was sent with, whatever the checkpoint holds by now.
          { messages: { replace: messages }, steps: 0, usage: ZERO },
          {
            configurable: { thread_id: conversation.id, turn: run },
            streamMode: 'custom',
            recursionLimit: maxSteps * 2 + 3,
            ...(turn.signal && { signal: turn.signal }),
          },
        );
        for await (const chunk of stream) yield chunk as Emitted;
      } finally {
        run.first.abandon();
      }

      const tuple = await deps.checkpointer.getTuple({ configurable: { thread_id: conversation.id } });
      const state = tuple?.checkpoint.channel_values as State;
      const produced = state.messages.slice(messages.length);
      const usage = state.usage;
      const answer = produced.filter((m) => m.role === 'assistant').at(-1)?.content ?? '';
      const records: NewMessage[] = [
        { ...userMessage, promptTokens: usage.promptTokens },
        ...produced.map((m, i) => (i === produced.length - 1 ? { ...m, completionTokens: usage.completionTokens } : m)),
      ];
      await deps.conversations.append(conversation, records);
      keep(conversation.id, state.messages);
      yield {
        type: 'done',
        response: { response: answer, conversation_id: conversation.id, model: deps.llm.model, usage: toUsage(usage) },
      };
    },
  };
}
