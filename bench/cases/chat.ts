import { request } from 'node:http';
import { startFakeOpenAi } from '../../test/fakes/openai.js';
import { startBaseline } from '../baseline-servers.js';
import { JSON_HEADERS, adminToken, bearer, checkOk } from '../client.js';
import type { Context } from '../context.js';
import { type Row, valueRow } from '../report.js';
import { freshDatabase, startService } from '../service.js';

/**
 * Streamed chat, first-token overhead: a loopback OpenAI-compatible server (the tests' fake, streaming SSE chunks,
 * waiting a fixed 20 ms before the first) behind the service (`LLM_PROVIDER=openai`). The time to the first
 * `token` event of `POST /api/playground/chat` with `stream: true`, minus the time to the first content chunk of
 * the same completion asked of the fake directly; p50 of each over sequential turns. "The same completion" is the
 * very request the service just sent (the session's history and the tools it offers, kilobytes that grow with
 * every turn): what the model takes to read a longer prompt is the model's time, not the service's. Beside it, the
 * same request through a bare `node:http` relay pinned where the service runs (`bench/baselines/model-relay.ts`):
 * the machine's floor; and, for comparison with earlier runs, the time a one-message request takes.
 */

const SECTION = 'Streamed chat, time to first token (playground POST /api/playground/chat)';
const DELAY_MS = 20;
const MODEL = 'gpt-4o-mini';

/**
 * Milliseconds from sending the request to the first chunk of the body containing `marker`, answered once the body
 * has ended: the next request starts with the last one's work done (a turn goes on after its first token).
 */
function timeToFirst(url: string, headers: Record<string, string>, body: string, marker: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const began = performance.now();
    let seen = '';
    const req = request(
      { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`${url} answered ${res.statusCode}`));
          return;
        }
        let first: number | undefined;
        res.on('data', (chunk: Buffer) => {
          if (first !== undefined) return;
          seen += chunk.toString('utf8');
          if (seen.includes(marker)) first = performance.now() - began;
        });
        res.on('end', () => {
          if (first !== undefined) resolve(first);
          else reject(new Error(`${url}: no ${JSON.stringify(marker)} in ${seen.slice(0, 300)}`));
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function chatFirstTokenRows(ctx: Context): Promise<Row[]> {
  const name = `first-token overhead p50 (model's first chunk after ${DELAY_MS} ms)`;
  const fake = await startFakeOpenAi([MODEL]);
  fake.delayMs = DELAY_MS;
  const relay = await startBaseline('model-relay', ctx.logDir, { UPSTREAM_URL: fake.url });
  try {
    const database = await freshDatabase(ctx.tmp, 'chat');
    const service = await startService({
      name: 'service-chat',
      database,
      logDir: ctx.logDir,
      env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: fake.url, LLM_MODEL: MODEL, LLM_API_KEY: 'sk-bench' },
    });
    try {
      const auth = { ...bearer(await adminToken(service.main)), ...JSON_HEADERS };
      const created = await checkOk('create playground session', `${service.playground}/api/playground/sessions`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ name: 'bench' }),
      });
      const sessionId = (JSON.parse(created) as { session_id: string }).session_id;
      const viaService = () =>
        timeToFirst(
          `${service.playground}/api/playground/chat`,
          { ...auth, Accept: 'text/event-stream' },
          JSON.stringify({ session_id: sessionId, message: 'Say hello', stream: true }),
          'event: token',
        );
      const oneMessage = JSON.stringify({
        model: MODEL,
        stream: true,
        messages: [{ role: 'user', content: 'Say hello' }],
      });
      /** The request the service sent the model last: what the relay and the direct request ask in its turn. */
      let sent = oneMessage;
      const serviceTurn = async () => {
        const ms = await viaService();
        const last = fake.requests.at(-1)?.body;
        if (last === undefined) throw new Error('the fake model recorded no request from the service');
        sent = JSON.stringify(last);
        return ms;
      };
      const direct = (body = sent) =>
        timeToFirst(
          `${fake.url}/chat/completions`,
          { ...JSON_HEADERS, Authorization: 'Bearer sk-bench' },
          body,
          '"content":"(fake)',
        );
      const viaRelay = () => timeToFirst(`${relay.url}/chat/completions`, JSON_HEADERS, sent, 'event: token');
      const turns = ctx.settings.chatTurns;
      ctx.log(`chat: ${turns} streamed turns through the service, a bare relay and straight to the fake model`);
      await serviceTurn();
      await viaRelay();
      await direct();
      await direct(oneMessage);
      const ours: number[] = [];
      const relayed: number[] = [];
      const theirs: number[] = [];
      const short: number[] = [];
      for (let i = 0; i < turns; i++) {
        ours.push(await serviceTurn());
        relayed.push(await viaRelay());
        theirs.push(await direct());
        short.push(await direct(oneMessage));
      }
      const overhead = p50(ours) - p50(theirs);
      const floor = p50(relayed) - p50(theirs);
      return [
        {
          ...valueRow(SECTION, name, overhead, 'ms', 3, {
            baseline: p50(theirs),
            note:
              `through the service p50 ${p50(ours).toFixed(2)} ms, the same request through a bare relay ` +
              `${p50(relayed).toFixed(2)} ms, straight to the model p50 ${p50(theirs).toFixed(2)} ms (a one-message ` +
              `request ${p50(short).toFixed(2)} ms; ${turns} turns each); baseline column = direct`,
          }),
          ratio: null,
        },
        {
          ...valueRow(SECTION, 'the same through a bare node:http relay (the floor, reported)', floor, 'ms', null, {
            baseline: p50(theirs),
          }),
          ratio: null,
        },
      ];
    } finally {
      await service.stop();
    }
  } finally {
    await relay.child.stop();
    await fake.close();
  }
}
