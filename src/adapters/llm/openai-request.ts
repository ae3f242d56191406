import type { IncomingMessage } from 'node:http';
import { headersOf } from '../../web-headers.js';
import { type HttpPost, ResponseTimedOut, textOf } from './http-post.js';
import { loadOpenAiSdk } from './openai-sdk.js';

/** How a chat-completions request is sent: per attempt until its answer starts, and how often again. */
export interface RequestPolicy {
  /** How long one attempt may wait for the response's status and headers. */
  timeoutMs: number;
  /** Attempts after the first, for connection failures, timeouts, 408, 409, 429 and 5xx. */
  maxRetries: number;
}

export interface CompletionPost {
  url: URL;
  headers: Record<string, string>;
  body: string;
  /** Stops the request, its retries and its response's body. */
  signal: AbortSignal;
}

/** The longest wait a provider may ask for between attempts (`retry-after`); beyond it, the default backoff. */
const LONGEST_ASKED_WAIT_MS = 60_000;
const FIRST_BACKOFF_MS = 500;
const LONGEST_BACKOFF_MS = 8_000;

/**
 * POSTs a chat-completions request with the official `openai` client's rules, and answers its response once the
 * status is a success: the body is the caller's to read. The client built each request through layers of option
 * merging, header normalisation and eager log formatting: a third of a millisecond before every model request
 * left, on the path of every first token. The rules are kept: each attempt waits `timeoutMs` for the answer to
 * start; connection failures, timeouts, 408, 409, 429 and 5xx are tried again (`x-should-retry` decides when the
 * provider sends it) after the wait the provider asks (`retry-after-ms`, `retry-after` in seconds or as a date, up
 * to a minute), else after 0.5 s doubling to 8 s with up to a quarter off; the failure at the end is the client's
 * own error class (`APIError.generate`, `APIConnectionError`…), so that callers map it as they map the client's.
 * Unlike the client's, a wait between attempts ends when the request is aborted.
 */
export async function postCompletion(
  send: HttpPost,
  post: CompletionPost,
  policy: RequestPolicy,
): Promise<IncomingMessage> {
  for (let attempt = 0; ; attempt++) {
    const retriesLeft = policy.maxRetries - attempt;
    let response: IncomingMessage;
    try {
      // Each attempt waits its own time for the answer to start; the caller's signal stops it, and its body after.
      response = await send({ ...post, timeoutMs: policy.timeoutMs });
    } catch (error) {
      const sdk = await loadOpenAiSdk();
      if (post.signal.aborted) throw new sdk.APIUserAbortError();
      if (retriesLeft <= 0) {
        throw error instanceof ResponseTimedOut
          ? new sdk.APIConnectionTimeoutError()
          : new sdk.APIConnectionError({ cause: error instanceof Error ? error : new Error(String(error)) });
      }
      await pause(backoffMs(attempt), post.signal);
      continue;
    }
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) return response;
    if (retriesLeft > 0 && shouldRetry(status, response)) {
      // Read to its end, so that the connection serves the next attempt.
      response.resume();
      await pause(askedWaitMs(response) ?? backoffMs(attempt), post.signal);
      continue;
    }
    const text = await textOf(response).catch(() => '');
    const sdk = await loadOpenAiSdk();
    const json = parseJson(text) as object | undefined;
    throw sdk.APIError.generate(status, json, json === undefined ? text : undefined, headersOf(response));
  }
}

function shouldRetry(status: number, response: IncomingMessage): boolean {
  const told = response.headers['x-should-retry'];
  if (told === 'true') return true;
  if (told === 'false') return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The wait the provider asked for, when it asked for one of up to a minute. */
function askedWaitMs({ headers }: IncomingMessage): number | undefined {
  const inMs = Number.parseFloat(String(headers['retry-after-ms']));
  let wait = Number.isNaN(inMs) ? undefined : inMs;
  const retryAfter = headers['retry-after'];
  if (wait === undefined && retryAfter) {
    const seconds = Number.parseFloat(retryAfter);
    wait = Number.isNaN(seconds) ? Date.parse(retryAfter) - Date.now() : seconds * 1000;
  }
  return wait !== undefined && wait >= 0 && wait < LONGEST_ASKED_WAIT_MS ? wait : undefined;
}

/** 0.5 s, doubling with each retry up to 8 s, less up to a quarter at random (so that callers spread out). */
function backoffMs(retriesDone: number): number {
  return Math.min(FIRST_BACKOFF_MS * 2 ** retriesDone, LONGEST_BACKOFF_MS) * (1 - Math.random() * 0.25);
}

/** Waits, or less once the request is aborted: the next attempt then ends at once, as aborted. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
