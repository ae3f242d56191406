import { Agent as HttpAgent, type IncomingMessage, type RequestOptions, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/** Statuses whose responses have no body (a `Response` refuses one). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * A `fetch` for the model client over Node's own HTTP client, on kept-alive connections. The global `fetch`
 * (undici's, with its request and response machinery around each call) put about half a millisecond more before a
 * streamed completion's request left and before its first chunk was read: first-token latency, on every turn.
 *
 * It does what the `openai` client asks of a fetch: a method, headers, a string or byte body, an abort signal, and
 * a `Response` whose body streams. It follows no redirects and asks for no compression (an API answers JSON and
 * event streams as they are); any other kind of body is handed to the global `fetch`.
 */
export function createHttpFetch(): typeof fetch {
  const agents = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };
  return (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const { body } = init;
    const sendable = body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array;
    if (input instanceof Request || !sendable || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      return fetch(input, init);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const options: RequestOptions = {
      method: init.method ?? 'GET',
      headers,
      agent: agents[url.protocol],
      ...(init.signal && { signal: init.signal }),
    };
    return new Promise<Response>((resolve, reject) => {
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(url, options, (res) => {
        try {
          resolve(responseOf(res, options.method === 'HEAD'));
        } catch (error) {
          // A status a Response cannot carry (above 599, say): the server is not one to talk to.
          res.destroy();
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
      req.on('error', reject);
      req.end(body ?? undefined);
    });
  };
}

function responseOf(res: IncomingMessage, head: boolean): Response {
  const status = res.statusCode ?? 502;
  const headers = new Headers();
  for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  if (head || NULL_BODY_STATUSES.has(status)) {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage ?? '', headers });
  }
  return new Response(bodyOf(res), {
    status,
    statusText: res.statusMessage ?? '',
    headers,
  });
}

/**
 * The response's body as a web stream, chunk for chunk as the socket brings them: paused while the reader has
 * not asked for more, destroyed when the reader cancels, errored when the response is cut off. (`Readable.toWeb`
 * does the same through more layers, which a streamed answer's every chunk paid for.)
 */
function bodyOf(res: IncomingMessage): ReadableStream<Uint8Array> {
  let open = true;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const settle = (end: () => void) => {
        if (!open) return;
        open = false;
        end();
      };
      res.on('data', (chunk: Buffer) => {
        if (!open) return;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        if ((controller.desiredSize ?? 0) <= 0) res.pause();
      });
      res.once('end', () => settle(() => controller.close()));
      res.once('error', (error) => settle(() => controller.error(error)));
      // Closed before its end without an error of its own (its request destroyed, say).
      res.once('close', () => settle(() => controller.error(new Error('the response was cut off'))));
    },
    pull() {
      res.resume();
    },
    cancel(reason) {
      open = false;
      res.destroy(reason instanceof Error ? reason : undefined);
    },
  });
}
