import type { ApiClient } from '../../../shared/api/api-client';
import { readServerSentEvents } from '../../../shared/api/sse';
import { builderErrorFrom, type RunStatus } from './builder-api';

/** What a workflow run streams, one server-sent event each. Node types are strings: a newer service may add some. */
type RunEventBody =
  | { type: 'run_started'; run_id: string; workflow_id: string; version: number }
  | { type: 'node_started'; node_id: string; node_type: string }
  | { type: 'token'; node_id: string; text: string }
  | { type: 'tool_call'; node_id: string; name: string; args: unknown }
  | { type: 'tool_result'; node_id: string; name: string; content: unknown; is_error: boolean }
  | { type: 'node_finished'; node_id: string; node_type: string }
  | { type: 'interrupt'; run_id: string; node_id: string; question: string }
  | { type: 'answer'; run_id: string; node_id: string; answer: string }
  | { type: 'end'; run_id: string; status: RunStatus; output: string | null; path: string[] }
  | { type: 'error'; run_id?: string; code?: string; message: string };

/**
 * A run event, with `at` (an ISO timestamp) when the service says when it happened: a run's recorded events always
 * do; a live stream's may not, and then the moment it arrived stands in.
 */
export type RunEvent = RunEventBody & { at?: string };

const str = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : fallback);

/** Reads one event from its wire form; unknown types give undefined (a newer service may send more). */
export function toRunEvent(type: string, d: Record<string, unknown>): RunEvent | undefined {
  const event = toRunEventBody(type, d);
  if (event === undefined || typeof d.at !== 'string' || Number.isNaN(Date.parse(d.at))) return event;
  return { ...event, at: d.at };
}

function toRunEventBody(type: string, d: Record<string, unknown>): RunEventBody | undefined {
  switch (type) {
    case 'run_started':
      return {
        type,
        run_id: str(d.run_id),
        workflow_id: str(d.workflow_id),
        version: typeof d.version === 'number' ? d.version : 0,
      };
    case 'node_started':
    case 'node_finished':
      return { type, node_id: str(d.node_id), node_type: str(d.node_type) };
    case 'token':
      return { type, node_id: str(d.node_id), text: str(d.text) };
    case 'tool_call':
      return { type, node_id: str(d.node_id), name: str(d.name, 'tool'), args: d.args ?? {} };
    case 'tool_result':
      return {
        type,
        node_id: str(d.node_id),
        name: str(d.name, 'tool'),
        content: d.content,
        is_error: d.is_error === true,
      };
    case 'interrupt':
      return { type, run_id: str(d.run_id), node_id: str(d.node_id), question: str(d.question) };
    case 'answer':
      return { type, run_id: str(d.run_id), node_id: str(d.node_id), answer: str(d.answer) };
    case 'end':
      return {
        type,
        run_id: str(d.run_id),
        status: (str(d.status) || 'completed') as RunStatus,
        output: typeof d.output === 'string' ? d.output : null,
        path: Array.isArray(d.path) ? d.path.filter((p): p is string => typeof p === 'string') : [],
      };
    case 'error':
      return {
        type,
        run_id: typeof d.run_id === 'string' ? d.run_id : undefined,
        code: typeof d.code === 'string' ? d.code : undefined,
        message: str(d.message, 'The run failed.'),
      };
    default:
      return undefined;
  }
}

/**
 * A run's recorded events, as `GET …/runs/:run_id/events` answers them (the stream's events, each with `at`, a
 * node's tokens possibly joined into longer ones). Entries it cannot read are left out.
 */
export function toRunEvents(body: unknown): RunEvent[] {
  if (!Array.isArray(body)) return [];
  const events: RunEvent[] = [];
  for (const entry of body) {
    if (typeof entry !== 'object' || entry === null) continue;
    const record = entry as Record<string, unknown>;
    const event = typeof record.type === 'string' ? toRunEvent(record.type, record) : undefined;
    if (event) events.push(event);
  }
  return events;
}

/**
 * POSTs to a run endpoint and hands every streamed event to `onEvent` until the stream ends (`end`, `error`,
 * or `interrupt`, after which the service closes it). The endpoint is a POST, so this reads the body with
 * fetch rather than EventSource. Aborting the signal stops reading; a non-2xx answer throws.
 */
export async function streamRun(
  client: ApiClient,
  path: string,
  body: unknown,
  signal: AbortSignal,
  onEvent: (event: RunEvent) => void,
): Promise<void> {
  const response = await client.fetch(client.url(path), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await builderErrorFrom(response);
  if (response.body === null) throw new Error('The service answered the run without a stream.');

  let finished = false;
  for await (const sse of readServerSentEvents(response.body)) {
    let data: unknown;
    try {
      data = JSON.parse(sse.data);
    } catch {
      data = {};
    }
    const record = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {};
    const type = sse.event === 'message' && typeof record.type === 'string' ? record.type : sse.event;
    const event = toRunEvent(type, record);
    if (!event) continue;
    onEvent(event);
    if (event.type === 'end' || event.type === 'error' || event.type === 'interrupt') finished = true;
  }
  if (!finished && !signal.aborted) {
    onEvent({ type: 'error', message: 'The run stream ended before the run finished or paused.' });
  }
}
