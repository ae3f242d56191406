import { createServer } from 'node:http';
import { listenAndAnnounce } from './listen.js';

/**
 * Baseline (a): a bare `node:http` server. GET answers a small JSON body; POST reads and parses its JSON body and
 * answers a small JSON body. No framework, no logging: the floor of what an HTTP request costs in Node.
 */
const server = createServer((req, res) => {
  const reply = (body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };
  if (req.method !== 'POST') {
    reply({ ok: true, service: 'raw-node-http' });
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400).end();
      return;
    }
    reply({ ok: true, received: typeof parsed });
  });
});
listenAndAnnounce(server);
