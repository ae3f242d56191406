import { SpanStatusCode, type Context } from '@opentelemetry/api';
import type { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanExporter,
  type SpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { FinishedSpan, Telemetry } from './port.js';

export interface TelemetryOptions {
  serviceName: string;
  serviceVersion: string;
  /** OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`); spans go to `<endpoint>/v1/traces`. */
  otlpEndpoint?: string;
}

// As `@opentelemetry/semantic-conventions` spells them: its ES module entry would load a second copy of the
// conventions beside the CommonJS one the SDK already loaded.
const ATTR_SERVICE_NAME = 'service.name';
const ATTR_SERVICE_VERSION = 'service.version';

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

type ExportResult = Parameters<Parameters<SpanExporter['export']>[1]>[0];
/** `ExportResultCode.FAILED` of `@opentelemetry/core`. */
const EXPORT_FAILED = 1 as ExportResult['code'];

/**
 * The OTLP exporter, loaded with the first batch it has to send: it and the OTLP encoding under it stay out of the
 * service's memory until spans are exported.
 */
class OtlpExporterOnFirstUse implements SpanExporter {
  #exporter: Promise<OTLPTraceExporter> | undefined;

  constructor(private readonly url: string) {}

  #loaded(): Promise<OTLPTraceExporter> {
    this.#exporter ??= import('@opentelemetry/exporter-trace-otlp-http').then(
      ({ OTLPTraceExporter }) => new OTLPTraceExporter({ url: this.url }),
    );
    return this.#exporter;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.#loaded().then(
      (exporter) => exporter.export(spans, done),
      (error: unknown) =>
        done({ code: EXPORT_FAILED, error: error instanceof Error ? error : new Error(String(error)) }),
    );
  }

  async forceFlush(): Promise<void> {
    if (this.#exporter) await (await this.#exporter).forceFlush();
  }

  async shutdown(): Promise<void> {
    if (this.#exporter) await (await this.#exporter).shutdown();
  }
}

export function createTelemetry(options: TelemetryOptions): Telemetry {
  const collecting = new CollectingProcessor();
  const exporting = options.otlpEndpoint
    ? [
        new BatchSpanProcessor({
          exporter: new OtlpExporterOnFirstUse(`${options.otlpEndpoint.replace(/\/+$/, '')}/v1/traces`),
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
