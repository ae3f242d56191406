import { SpanStatusCode, type Context } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { FinishedSpan, Telemetry } from './port.js';

export interface TelemetryOptions {
  serviceName: string;
  serviceVersion: string;
  /** OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`); spans go to `<endpoint>/v1/traces`. */
  otlpEndpoint?: string;
}

const durationMs = ([seconds, nanos]: [number, number]) => Math.round(seconds * 1000 + nanos / 1e6);
const isoOf = ([seconds, nanos]: [number, number]) => new Date(seconds * 1000 + Math.floor(nanos / 1e6)).toISOString();
const STATUS = { [SpanStatusCode.OK]: 'ok', [SpanStatusCode.ERROR]: 'error', [SpanStatusCode.UNSET]: 'unset' } as const;

function finished(span: ReadableSpan): FinishedSpan {
  const context = span.spanContext();
  return {
    traceId: context.traceId,
    spanId: context.spanId,
    parentSpanId: span.parentSpanContext?.spanId ?? null,
    name: span.name,
    startedAt: isoOf(span.startTime),
    durationMs: durationMs(span.duration),
    status: STATUS[span.status.code],
    attributes: { ...span.attributes },
  };
}

/** Routes the spans of traces whose root carries a collector's attribute to that collector. */
class CollectingProcessor implements SpanProcessor {
  readonly #collectors: { attribute: string; sink: (owner: string, span: FinishedSpan) => void }[] = [];
  /** The owner of each open trace, by trace id and collector; forgotten when the root ends. */
  readonly #owners = new Map<string, { owner: string; sink: (owner: string, span: FinishedSpan) => void }>();

  add(attribute: string, sink: (owner: string, span: FinishedSpan) => void): void {
    this.#collectors.push({ attribute, sink });
  }

  onStart(span: Span, _parent: Context): void {
    if (span.parentSpanContext) return;
    for (const { attribute, sink } of this.#collectors) {
      const owner = span.attributes[attribute];
      if (typeof owner === 'string') this.#owners.set(span.spanContext().traceId, { owner, sink });
    }
  }

  onEnd(span: ReadableSpan): void {
    const traceId = span.spanContext().traceId;
    const collector = this.#owners.get(traceId);
    if (!collector) return;
    if (!span.parentSpanContext) this.#owners.delete(traceId);
    collector.sink(collector.owner, finished(span));
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    this.#owners.clear();
    return Promise.resolve();
  }
}

export function createTelemetry(options: TelemetryOptions): Telemetry {
  const collecting = new CollectingProcessor();
  const exporting = options.otlpEndpoint
    ? [
        new BatchSpanProcessor({
          exporter: new OTLPTraceExporter({ url: `${options.otlpEndpoint.replace(/\/+$/, '')}/v1/traces` }),
          scheduledDelayMillis: 1_000,
        }),
      ]
    : [];
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: options.serviceName,
      [ATTR_SERVICE_VERSION]: options.serviceVersion,
    }),
    spanProcessors: [collecting, ...exporting],
  });
  return {
    tracer: provider.getTracer(options.serviceName, options.serviceVersion),
    collect: (attribute, sink) => collecting.add(attribute, sink),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
