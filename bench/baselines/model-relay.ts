import { Agent, createServer, request } from 'node:http';
import { listenAndAnnounce } from './listen.js';

/**
 * Baseline: the least a service in front of a model does. Each POST is forwarded as it came to the model
 * (`UPSTREAM_URL` + `/chat/completions`, on a kept-alive connection), and each streamed chunk with text is answered
 * as the playground's `token` event. No authentication, storage, agent or client library: what is left of the
 * first-token overhead here is the machine's, two more loopback hops and one more event loop.
 */
const upstream = new URL(`${process.env.UPSTREAM_URL ?? ''}/chat/completions`);
const agent = new Agent({ keepAlive: true });

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const ask = request(upstream, { method: 'POST', agent, headers: { 'Content-Type': 'application/json' } }, (up) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      let pending = '';
      up.setEncoding('utf8');
      up.on('data', (text: string) => {
        const events = (pending + text).split('\n\n');
        pending = events.pop() ?? '';
        for (const event of events) {
          if (!event.startsWith('data: {')) continue;
          const chunk = JSON.parse(event.slice(6)) as { choices?: { delta?: { content?: string } }[] };
          const content = chunk.choices?.[0]?.delta?.content;
          if (content) res.write(`event: token\ndata: ${JSON.stringify({ content })}\n\n`);
        }
      });
      up.on('end', () => res.end());
      up.on('error', () => res.destroy());
    });
    ask.on('error', () => res.destroy());
    ask.end(Buffer.concat(chunks));
  });
});
listenAndAnnounce(server);
