import type { Span } from '../../api/playground-api';

export interface WaterfallRow {
  span: Span;
  depth: number;
  /** Milliseconds from the start of its trace. */
  offsetMs: number;
  /** Position and width of the bar, as fractions of the trace's length (0..1). */
  left: number;
  width: number;
}

export interface TraceGroup {
  traceId: string;
  /** The root span's operation, e.g. the chat turn. */
  title: string;
  startedAt: number;
  durationMs: number;
  errorCount: number;
  rows: WaterfallRow[];
}

function startOf(span: Span): number {
  const t = Date.parse(span.timestamp);
  return Number.isNaN(t) ? 0 : t;
}

function lengthOf(span: Span): number {
  return Number.isFinite(span.duration_ms) && span.duration_ms > 0 ? span.duration_ms : 0;
}

/**
 * Spans grouped by trace (one per turn, newest first), each trace's spans depth-first under their parents in
 * start order. Spans whose parent is not in the list are drawn as roots, so a partial list still shows.
 */
export function buildWaterfall(spans: Span[]): TraceGroup[] {
  const byTrace = new Map<string, Span[]>();
  for (const span of spans) {
    const list = byTrace.get(span.trace_id);
    if (list) list.push(span);
    else byTrace.set(span.trace_id, [span]);
  }

  const groups: TraceGroup[] = [];
  for (const [traceId, traceSpans] of byTrace) {
    const start = Math.min(...traceSpans.map(startOf));
    const end = Math.max(...traceSpans.map((s) => startOf(s) + lengthOf(s)));
    const total = Math.max(end - start, 1);
    const ids = new Set(traceSpans.map((s) => s.span_id));
    const children = new Map<string | null, Span[]>();
    for (const span of traceSpans) {
      const parent = span.parent_span_id !== null && ids.has(span.parent_span_id) ? span.parent_span_id : null;
      const list = children.get(parent);
      if (list) list.push(span);
      else children.set(parent, [span]);
    }
    for (const list of children.values()) list.sort((a, b) => startOf(a) - startOf(b));

    const rows: WaterfallRow[] = [];
    const visited = new Set<string>();
    const visit = (span: Span, depth: number) => {
      if (visited.has(span.span_id)) return; // a malformed parent cycle must not hang the page
      visited.add(span.span_id);
      const offsetMs = startOf(span) - start;
      rows.push({
        span,
        depth,
        offsetMs,
        left: offsetMs / total,
        width: lengthOf(span) / total,
      });
      for (const child of children.get(span.span_id) ?? []) visit(child, depth + 1);
    };
    for (const root of children.get(null) ?? []) visit(root, 0);
    for (const span of traceSpans) visit(span, 0);

    const root = rows[0]?.span;
    groups.push({
      traceId,
      title: root?.operation ?? traceId,
      startedAt: start,
      durationMs: end - start,
      errorCount: traceSpans.filter((s) => s.status === 'error').length,
      rows,
    });
  }
  return groups.sort((a, b) => b.startedAt - a.startedAt);
}

/** Attributes people look for first, with a readable name; everything else follows in key order. */
export const KEY_ATTRIBUTES: [key: string, label: string][] = [
  ['gen_ai.request.model', 'Model'],
  ['gen_ai.usage.input_tokens', 'Input tokens'],
  ['gen_ai.usage.output_tokens', 'Output tokens'],
  ['gen_ai.tool.name', 'Tool'],
];
