import { type Tracer, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterEach, describe, expect, it } from 'vitest';
import { inModelSpan, inToolSpan, startTurnSpan } from '../../src/modules/agent/agent.telemetry.js';

/*
 * The agent's spans through the real OpenTelemetry SDK, into an in-memory exporter: when a call's span is made,
 * what it is timed from, and that a call failing at once is still recorded.
 */

const MODEL = { provider: 'openai', model: 'gpt-test' };
const USAGE = { promptTokens: 3, completionTokens: 2, totalTokens: 5 };

const exporter = new InMemorySpanExporter();
/** The names of the spans made, in the order they were made. */
const made: string[] = [];
const provider = new TracerProvider({
  spanProcessors: [
    new SimpleSpanProcessor({ exporter }),
    {
      onStart: (span) => void made.push(span.name),
      onEnd: () => undefined,
      forceFlush: () => Promise.resolve(),
      shutdown: () => Promise.resolve(),
    },
  ],
});
const tracer = provider.getTracer('test');

afterEach(() => {
  exporter.reset();
  made.length = 0;
});

/** The tracer, telling `order` when a span is made. */
function watched(order: string[]): Tracer {
  return {
    startSpan: (...args: Parameters<Tracer['startSpan']>) => {
      order.push(`span ${args[0]}`);
      return tracer.startSpan(...args);
    },
    startActiveSpan: tracer.startActiveSpan.bind(tracer),
  };
}

const millisOf = ([seconds, nanos]: [number, number]) => seconds * 1000 + nanos / 1e6;

/** Busy for `ms` milliseconds, without yielding (a call shorter than a clock tick). */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('the spans of model and tool calls', () => {
  it('starts the call before making its span, and times the span from before the call', async () => {
    const order: string[] = [];
    const { context } = startTurnSpan(tracer, MODEL);
    let inner = 0;
    const before = performance.now();
    await inModelSpan(watched(order), context, MODEL, () => {
      // What a model call does first, synchronously: preparing and sending its request.
      const from = performance.now();
      spin(0.3);
      inner = performance.now() - from;
      order.push('request sent');
      return Promise.resolve({ usage: USAGE });
    });
    const outer = performance.now() - before;
    expect(order).toEqual(['request sent', 'span chat gpt-test']);
    const span = exporter.getFinishedSpans().find((s) => s.name === 'chat gpt-test')!;
    // Timed from before the request, not from when the span was made after it.
    expect(millisOf(span.duration)).toBeGreaterThanOrEqual(inner - 0.001);
    expect(millisOf(span.duration)).toBeLessThanOrEqual(outer + 0.001);
    expect(span.attributes['gen_ai.usage.output_tokens']).toBe(2);
  });

  it('makes the span after the request has gone, in the tick queued after the request', async () => {
    const order: string[] = [];
    const call = inModelSpan(watched(order), undefined, MODEL, async () => {
      // Node writes a request in a tick it queues as the request is made.
      process.nextTick(() => order.push('request written'));
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { usage: USAGE };
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(['request written', 'span chat gpt-test']);
    await call;
  });

  it('times calls shorter than a millisecond below the millisecond', async () => {
    // A span given its start is otherwise ended by the wall clock's milliseconds, up to a millisecond early.
    for (let i = 0; i < 5; i++) {
      let inner = 0;
      const before = performance.now();
      await inToolSpan(tracer, undefined, { name: 'quick', callId: `c${i}` }, async () => {
        await new Promise((resolve) => process.nextTick(resolve));
        const from = performance.now();
        spin(0.2);
        inner = performance.now() - from;
        return { isError: false };
      });
      const outer = performance.now() - before;
      const duration = millisOf(exporter.getFinishedSpans()[i]!.duration);
      expect(duration).toBeGreaterThanOrEqual(inner - 0.001);
      expect(duration).toBeLessThanOrEqual(outer + 0.001);
    }
  });

  it('records a call that fails at once, before anything is awaited', async () => {
    const failing = () => {
      throw new Error('no connection');
    };
    await expect(inModelSpan(tracer, undefined, MODEL, failing as never)).rejects.toThrow('no connection');
    const spans = exporter.getFinishedSpans();
    expect(spans).toHaveLength(1);
    expect(spans[0]!.status).toMatchObject({ code: 2, message: 'no connection' });
    expect(spans[0]!.attributes['error.type']).toBe('Error');
  });

  it("makes a turn's span when its first call's span needs it, timed from the turn's start", async () => {
    const order: string[] = [];
    const before = performance.now();
    const { span: turn, context } = startTurnSpan(tracer, MODEL, { 'playground.session_id': 's1' });
    const from = performance.now();
    spin(0.3);
    await inModelSpan(tracer, context, MODEL, () => {
      order.push(`request sent (${made.length} spans made)`);
      return Promise.resolve({ usage: USAGE });
    });
    expect(order).toEqual(['request sent (0 spans made)']);
    expect(made).toEqual(['invoke_agent agent-service', 'chat gpt-test']);
    turn.setAttribute('gen_ai.conversation.id', 'c1');
    const inner = performance.now() - from;
    turn.end();
    const outer = performance.now() - before;
    const root = exporter.getFinishedSpans().find((s) => s.name === 'invoke_agent agent-service')!;
    expect(millisOf(root.duration)).toBeGreaterThanOrEqual(inner - 0.001);
    expect(millisOf(root.duration)).toBeLessThanOrEqual(outer + 0.001);
    expect(root.attributes).toMatchObject({ 'playground.session_id': 's1', 'gen_ai.conversation.id': 'c1' });
  });

  it('is a child of the turn whose context it is given', async () => {
    const { span: turn, context } = startTurnSpan(tracer, MODEL);
    await inModelSpan(tracer, context, MODEL, () => Promise.resolve({ usage: USAGE }));
    turn.end();
    const [model, root] = exporter.getFinishedSpans();
    expect(model!.parentSpanContext?.spanId).toBe(root!.spanContext().spanId);
    expect(trace.getSpan(context)).toBe(turn);
  });
});
