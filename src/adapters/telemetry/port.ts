import type { Tracer } from '@opentelemetry/api';

/** A finished span, as the service keeps it (the spec's Trace, plus the parent that places it in a waterfall). */
export interface FinishedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  /** ISO 8601 start time. */
  startedAt: string;
  durationMs: number;
  status: 'ok' | 'error' | 'unset';
  attributes: Record<string, unknown>;
}

/**
 * OpenTelemetry for the service: one tracer provider per app (so apps in one process never share spans), exported
 * over OTLP when an endpoint is configured, and readable by the modules that keep spans themselves.
 */
export interface Telemetry {
  readonly tracer: Tracer;
  /**
   * Hands every finished span of a trace whose root span was started with `attribute` to `sink`, with the value of
   * that attribute (who the trace belongs to: a playground session, say). The root's children end first; they are
   * still handed over.
   */
  collect(attribute: string, sink: (owner: string, span: FinishedSpan) => void): void;
  /** Exports what is buffered (OTLP). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}
