import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { StringDecoder } from 'node:string_decoder';

/** One POST: where, with what headers and body; aborting `signal` ends it, its response's body included. */
export interface Post {
  url: URL;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  /** How long to wait for the response's status and headers; past it the POST is given up (`ResponseTimedOut`). */
  timeoutMs?: number;
}

/** The response's status and headers did not come within the POST's `timeoutMs`; the request was destroyed. */
export class ResponseTimedOut extends Error {
  constructor(timeoutMs: number) {
    super(`no response within ${timeoutMs} ms`);
  }
}

/** Sends a POST and answers its response once the status and headers have come; the body streams from it. */
export type HttpPost = (post: Post) => Promise<IncomingMessage>;

/**
 * POSTs for the model provider over Node's own HTTP client, on kept-alive connections, answering Node's own response:
 * the global `fetch` (undici's request and response objects, header lists and web streams around each call) put
 * time before a streamed completion's request left and again before its first chunk was read: first-token latency,
 * on every turn. The response's body is read as a stream of Buffers; it errors when the response is cut off or the
 * request aborted, and a reader that stops early destroys it (and its connection).
 */
export function createHttpPost(): HttpPost {
  const agents: Record<string, HttpAgent> = {
    'http:': new HttpAgent({ keepAlive: true }),
    'https:': new HttpsAgent({ keepAlive: true }),
  };
  return ({ url, headers, body, signal, timeoutMs }) =>
    new Promise((resolve, reject) => {
      const agent = agents[url.protocol];
      if (!agent) {
        reject(new TypeError(`not an HTTP URL: ${url.protocol}`));
        return;
      }
      if (signal.aborted) {
        reject(abortError());
        return;
      }
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      let timer: NodeJS.Timeout | undefined;
      const req = send(
        url,
        { method: 'POST', headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) }, agent },
        (response) => {
          clearTimeout(timer);
          // Whoever reads the body learns of its errors (a cut-off answer, an abort); one that comes after the reader
          // has gone must not end the process.
          response.on('error', ignore);
          resolve(response);
        },
      );
      if (timeoutMs !== undefined)
        timer = setTimeout(() => {
          reject(new ResponseTimedOut(timeoutMs));
          req.destroy();
        }, timeoutMs);
      // Aborting destroys the request without an error of its own: Node's `signal` option destroys it with one,
      // which its socket may report after its listeners are gone (an uncaught error). A response already
      // answered ends in Node's 'aborted'.
      const abort = () => {
        req.destroy();
        reject(abortError());
      };
      signal.addEventListener('abort', abort, { once: true });
      req.once('close', () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', abort);
      });
      // Stays on for the request's life: a reset after the answer started must not go unheard.
      req.on('error', reject);
      req.end(body);
    });
}

const abortError = () => new DOMException('This operation was aborted', 'AbortError');
const ignore = () => undefined;

/** A response's whole body as text (an error's, which is short). */
export async function textOf(response: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of textChunks(response)) text += chunk;
  return text;
}

/**
 * A response's body as text, as it arrives (a character split between two chunks comes whole with the second):
 * what came since the last read, at each read. The response is paused while nobody reads, errors end the reading
 * (a response cut off before its end is one), and a reader that stops early destroys the response. Node's own
 * async iterator over a stream goes through its `readable` machinery and end-of-stream tracking on every chunk;
 * this is the part of it a streamed answer needs.
 */
export async function* textChunks(response: IncomingMessage): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let ended = false;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const onData = (chunk: Buffer) => {
    pending += decoder.write(chunk);
    response.pause();
    wake?.();
  };
  const onEnd = () => {
    ended = true;
    pending += decoder.end();
    wake?.();
  };
  const onError = (error: Error) => {
    failure ??= error;
    wake?.();
  };
  const onClose = () => {
    if (!ended) onError(new Error('the response was cut off'));
  };
  response.on('data', onData);
  response.on('end', onEnd);
  response.on('error', onError);
  response.on('close', onClose);
  try {
    for (;;) {
      if (pending !== '') {
        const text = pending;
        pending = '';
        yield text;
        continue;
      }
      if (failure) throw failure;
      if (ended) return;
      response.resume();
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    response.off('data', onData);
    response.off('end', onEnd);
    response.off('error', onError);
    response.off('close', onClose);
    if (!ended) response.destroy();
  }
}
