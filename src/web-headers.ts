import type { IncomingMessage } from 'node:http';

/** A Node message's headers (a request received or a response read) as a web `Headers` list, in the order sent. */
export function headersOf(message: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = message.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  return headers;
}
