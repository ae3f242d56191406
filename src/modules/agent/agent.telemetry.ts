import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  type Tracer,
  createContextKey,
  trace,
} from '@opentelemetry/api';
import { type Usage, usageOfAborted } from '../../adapters/llm/port.js';

/*
 * The agent's spans, named and attributed after the OpenTelemetry GenAI semantic conventions: one `invoke_agent`
 * span per turn, and under it a `chat <model>` span per model call and an `execute_tool <tool>` span per tool call.
 */

export const AGENT_NAME = 'agent-service';

/*
 * The GenAI attribute names, as `@opentelemetry/semantic-conventions/incubating` spells them. That entry point is
 * one module of every experimental attribute (about 3 MB of memory once loaded), for these few names.
 */
const ATTR_ERROR_TYPE = 'error.type';
const ATTR_GEN_AI_AGENT_NAME = 'gen_ai.agent.name';
export const ATTR_GEN_AI_CONVERSATION_ID = 'gen_ai.conversation.id';
const ATTR_GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
const ATTR_GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name';
const ATTR_GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
const ATTR_GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model';
const ATTR_GEN_AI_TOOL_CALL_ID = 'gen_ai.tool.call.id';
const ATTR_GEN_AI_TOOL_NAME = 'gen_ai.tool.name';
const ATTR_GEN_AI_TOOL_TYPE = 'gen_ai.tool.type';
const ATTR_GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
const ATTR_GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';

/** The tracer of nothing: spans are recorded only when the app gives the agent a real one. */
export const NO_TRACER: Tracer = trace.getTracerProvider().getTracer('none');

export interface ModelInfo {
  provider: string;
  model: string;
}

/** Ends a span as failed: an error the turn met, or a cancellation (`error.type` says which). */
export function failSpan(span: Span, error: unknown, cancelled = false): void {
  const message = error instanceof Error ? error.message : String(error);
  span.setAttribute(ATTR_ERROR_TYPE, cancelled ? 'cancelled' : error instanceof Error ? error.name : 'error');
  if (!cancelled && error instanceof Error) span.recordException(error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: cancelled ? 'cancelled' : message });
}

export function usageAttributes(usage: Usage): Attributes {
  return {
    [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: usage.promptTokens,
    [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: usage.completionTokens,
  };
}

/**
 * What a turn's model calls used, as their spans record it: those that answered, and those stopped half-way (with
 * the provider's estimate). A turn that ends normally has its usage in its answer; a stopped one has only this.
 */
class TurnUsage {
  #usage: Usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  readonly #calls = new Set<Promise<unknown>>();

  add(usage: Usage): void {
    this.#usage = {
      promptTokens: this.#usage.promptTokens + usage.promptTokens,
      completionTokens: this.#usage.completionTokens + usage.completionTokens,
      totalTokens: this.#usage.totalTokens + usage.totalTokens,
    };
  }

  /** Counts a model call once it has ended. */
  track(call: Promise<unknown>): void {
    const settled = call.then(
      () => undefined,
      () => undefined,
    );
    this.#calls.add(settled);
    void settled.finally(() => this.#calls.delete(settled));
  }

  /** The sum, once every call in flight has ended (a stopped one ends as soon as its provider notices). */
  async total(): Promise<Usage> {
    while (this.#calls.size > 0) await Promise.all(this.#calls);
    return this.#usage;
  }
}

const TURN_USAGE = createContextKey('agent-service turn usage');

/** What the model calls under a turn's context used (see `startTurnSpan`), once those in flight have ended. */
export function turnUsageOf(context: Context): Promise<Usage> {
  const usage = context.getValue(TURN_USAGE);
  return usage instanceof TurnUsage
    ? usage.total()
    : Promise.resolve({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
}

/**
 * A span made the first time something needs it (or `made` is called), timed from when it was asked for: its
 * bookkeeping (ids, attributes, the processors) need not stand between the caller and the model. A turn's span is
 * needed first by its first model call's span, which is made once the model's request has gone (`inSpan`). Start
 * and end are performance timestamps: the SDK ends a span given its start by the wall clock's milliseconds
 * otherwise, and a call shorter than one would end before it began.
 */
class LaterSpan implements Span {
  readonly #startTime = performance.now();
  #span: Span | undefined;

  constructor(private readonly make: (startTime: number) => Span) {}

  /** The span, made now if it was not yet. */
  made(): Span {
    return (this.#span ??= this.make(this.#startTime));
  }

  spanContext() {
    return this.made().spanContext();
  }
  setAttribute(...args: Parameters<Span['setAttribute']>) {
    this.made().setAttribute(...args);
    return this;
  }
  setAttributes(...args: Parameters<Span['setAttributes']>) {
    this.made().setAttributes(...args);
    return this;
  }
  addEvent(...args: Parameters<Span['addEvent']>) {
    this.made().addEvent(...args);
    return this;
  }
  addLink(...args: Parameters<Span['addLink']>) {
    this.made().addLink(...args);
    return this;
  }
  addLinks(...args: Parameters<Span['addLinks']>) {
    this.made().addLinks(...args);
    return this;
  }
  setStatus(...args: Parameters<Span['setStatus']>) {
    this.made().setStatus(...args);
    return this;
  }
  updateName(...args: Parameters<Span['updateName']>) {
    this.made().updateName(...args);
    return this;
  }
  end(endTime: Parameters<Span['end']>[0] = performance.now()) {
    this.made().end(endTime);
  }
  isRecording() {
    return this.made().isRecording();
  }
  recordException(...args: Parameters<Span['recordException']>) {
    this.made().recordException(...args);
  }
}

/**
 * Starts a turn's span, a root; its context is the parent of the turn's model and tool spans, and adds up what the
 * model calls under it use (`turnUsageOf`). The span is made when first needed (`LaterSpan`), timed from now.
 */
export function startTurnSpan(
  tracer: Tracer,
  model: ModelInfo,
  attributes: Attributes = {},
): { span: Span; context: Context } {
  const span = new LaterSpan((startTime) =>
    tracer.startSpan(
      `invoke_agent ${AGENT_NAME}`,
      {
        kind: SpanKind.INTERNAL,
        startTime,
        attributes: {
          [ATTR_GEN_AI_OPERATION_NAME]: 'invoke_agent',
          [ATTR_GEN_AI_AGENT_NAME]: AGENT_NAME,
          [ATTR_GEN_AI_PROVIDER_NAME]: model.provider,
          [ATTR_GEN_AI_REQUEST_MODEL]: model.model,
          ...attributes,
        },
      },
      ROOT_CONTEXT,
    ),
  );
  return { span, context: trace.setSpan(ROOT_CONTEXT, span).setValue(TURN_USAGE, new TurnUsage()) };
}

/**
 * Runs `run` in a span that fails with what it throws (or as cancelled, once `signal` is aborted); `failed` may
 * add to the failed span what the error tells.
 *
 * The span is made once `run` has started, timed from before it: a model call's request is on its way before the
 * span's bookkeeping (ids, attributes, the processors) is done. Node writes a request to its socket in a tick of
 * its own, queued as the request is made; the span's tick is queued after it, so it runs once the request has gone.
 * Whatever needs the span sooner (a call that fails at once) makes it then.
 */
async function inSpan<T>(
  tracer: Tracer,
  parent: Context | undefined,
  name: string,
  options: SpanOptions,
  run: () => Promise<T>,
  succeeded: (span: Span, result: T) => void,
  signal: AbortSignal | undefined,
  failed?: (span: Span, error: unknown) => void,
): Promise<T> {
  const span = new LaterSpan((startTime) => tracer.startSpan(name, { ...options, startTime }, parent));
  // Started at once (up to its first await), a throw before that a rejection like any other.
  const running = (async () => run())();
  process.nextTick(() => span.made());
  try {
    const result = await running;
    succeeded(span, result);
    return result;
  } catch (error) {
    failed?.(span, error);
    failSpan(span, error, signal?.aborted === true);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Runs one model call in a `chat <model>` span; `run` reports the call's usage. A call stopped half-way records the
 * usage its AbortError carries. Either way the usage counts in the turn's (`turnUsageOf` the parent).
 */
export function inModelSpan<T extends { usage: Usage }>(
  tracer: Tracer,
  parent: Context | undefined,
  model: ModelInfo,
  run: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: 'chat',
    [ATTR_GEN_AI_PROVIDER_NAME]: model.provider,
    [ATTR_GEN_AI_REQUEST_MODEL]: model.model,
  };
  const turn = parent?.getValue(TURN_USAGE);
  const turnUsage = turn instanceof TurnUsage ? turn : undefined;
  const call = inSpan(
    tracer,
    parent,
    `chat ${model.model}`,
    { kind: SpanKind.CLIENT, attributes },
    run,
    (span, result) => {
      span.setAttributes({ ...usageAttributes(result.usage), [ATTR_GEN_AI_RESPONSE_MODEL]: model.model });
      span.setStatus({ code: SpanStatusCode.OK });
      turnUsage?.add(result.usage);
    },
    signal,
    (span, error) => {
      const used = usageOfAborted(error);
      if (!used) return;
      span.setAttributes(usageAttributes(used));
      turnUsage?.add(used);
    },
  );
  turnUsage?.track(call);
  return call;
}

/** Runs one tool call in an `execute_tool <tool>` span; a result marked as an error fails the span. */
export function inToolSpan<T extends { isError?: boolean }>(
  tracer: Tracer,
  parent: Context | undefined,
  tool: { name: string; callId: string },
  run: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const attributes = {
    [ATTR_GEN_AI_OPERATION_NAME]: 'execute_tool',
    [ATTR_GEN_AI_TOOL_NAME]: tool.name,
    [ATTR_GEN_AI_TOOL_CALL_ID]: tool.callId,
    [ATTR_GEN_AI_TOOL_TYPE]: 'function',
  };
  return inSpan(
    tracer,
    parent,
    `execute_tool ${tool.name}`,
    { kind: SpanKind.INTERNAL, attributes },
    run,
    (span, result) => {
      if (result.isError) {
        span.setAttribute(ATTR_ERROR_TYPE, 'tool_error');
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'the tool reported an error' });
      } else span.setStatus({ code: SpanStatusCode.OK });
    },
    signal,
  );
}
