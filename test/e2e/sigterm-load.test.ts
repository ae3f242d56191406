import { mkdtempSync } from 'node:fs';
import { Agent, type IncomingHttpHeaders, request } from 'node:http';
import { type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD } from '../helpers/auth.js';
import { killRunning, startServing } from '../helpers/service-process.js';

/**
 * SIGTERM while the service is under concurrent keep-alive traffic: every request the service had accepted
 * finishes with its normal answer, what comes later is refused at the door, readiness answers 503 while the drain
 * lasts, and the process exits 0. No request sees a 500.
 *
 * Every request is sent with `Expect: 100-continue`, so the client knows which ones the service accepted: it
 * answers 100 Continue once it has read a request's headers and handed it to the app.
 */
afterEach(killRunning);

interface Outcome {
  request: string;
  /** The service read the headers (100 Continue came back). */
  accepted: boolean;
  /** The request went out on a keep-alive connection that had carried an earlier one. */
  reusedSocket: boolean;
  /** SIGTERM had been sent when the request settled. */
  afterSignal: boolean;
  status?: number;
  headers?: IncomingHttpHeaders;
  body?: string;
  /** The whole response was read. */
  complete: boolean;
  error?: string;
}

interface Send {
  method?: string;
  path: string;
  token?: string;
  agent: Agent;
  /** A body sent half once the headers are accepted (then `accepted` is called), the rest when `release` resolves. */
  held?: { body: string; accepted: () => void; release: Promise<void> };
}

describe('SIGTERM under load', () => {
  it('finishes accepted requests, refuses new connections, answers readiness 503 while draining, exits 0', async () => {
    const dbFile = join(mkdtempSync(join(tmpdir(), 'agent-sigterm-')), 'agent.db');
    // A drain budget far longer than the test needs: nothing here may be cut off by the timeout.
    const { run: serving, url } = await startServing(dbFile, { ADMIN_PASSWORD, SHUTDOWN_TIMEOUT_MS: '20000' });
    const { hostname, port } = new URL(url);
    let signalled = false;

    const login = await fetch(`${url}/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD }),
    });
    expect(login.status).toBe(200);
    const token = ((await login.json()) as { access_token: string }).access_token;

    /** Sockets that have carried a request (`req.reusedSocket` misses a request queued for a socket that frees). */
    const used = new WeakSet<Socket>();

    function send({ method = 'GET', path, token: bearer, agent, held }: Send): Promise<Outcome> {
      return new Promise((resolve) => {
        const outcome: Outcome = {
          request: `${method} ${path}`,
          accepted: false,
          reusedSocket: false,
          afterSignal: false,
          complete: false,
        };
        const settle = (error?: Error & { code?: string }) => {
          if (error) outcome.error = error.code ?? error.message;
          outcome.afterSignal = signalled;
          resolve(outcome);
        };
        const headers: Record<string, string> = { Expect: '100-continue' };
        if (bearer) headers.Authorization = `Bearer ${bearer}`;
        if (held) {
          headers['Content-Type'] = 'application/json';
          headers['Content-Length'] = String(Buffer.byteLength(held.body));
        }
        const req = request({ host: hostname, port, method, path, headers, agent });
        req.once('socket', (socket: Socket) => {
          outcome.reusedSocket = used.has(socket);
          used.add(socket);
        });
        req.once('error', settle);
        req.once('continue', () => {
          outcome.accepted = true;
          if (!held) return;
          held.accepted();
          req.write(held.body.slice(0, 5));
          void held.release.then(() => req.end(held.body.slice(5)));
        });
        req.once('response', (res) => {
          outcome.status = res.statusCode;
          outcome.headers = res.headers;
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.once('error', settle);
          res.once('end', () => {
            outcome.body = body;
            outcome.complete = !res.aborted;
            settle();
          });
        });
        if (!held) req.end();
      });
    }

    /** What the service may answer: the request's normal answer, or a clean 503. Never a 500, never half. */
    function answerProblem(o: Outcome): string | undefined {
      if (!o.complete) return `cut off after ${o.status === undefined ? 'its headers were accepted' : o.status}`;
      const body = JSON.parse(o.body || '{}') as Record<string, unknown>;
      if (o.status === 200) return undefined;
      if (o.status === 503 && o.request === 'GET /health/ready')
        return (body.blocking as string[] | undefined)?.includes('shutdown') ? undefined : 'unready, not for shutdown';
      if (o.status === 503 && body.error === 'service_unavailable' && typeof body.code === 'string') return undefined;
      return `answered ${o.status}`;
    }

    /**
     * How a request fared through the shutdown, retried as a client would when the service never read it.
     * Accepted: it must have its answer. Not accepted, once SIGTERM was sent: refused (the listener is closed), or
     * reset with nothing answered, which is a connection closed before the service read from it (a pooled
     * keep-alive connection closed as idle, or a new one still in the listen queue when the listener closed;
     * RFC 9112 §9.3.1 has the client retry): the retry, on a new connection, must fare as well.
     */
    async function fate(
      first: Outcome,
      retry: () => Promise<Outcome>,
    ): Promise<{ outcome: Outcome; resets: number; problem?: string }> {
      let o = first;
      for (let resets = 0; ; resets++) {
        if (o.accepted || o.status !== undefined) return { outcome: o, resets, problem: answerProblem(o) };
        if (!o.afterSignal) return { outcome: o, resets, problem: `failed before SIGTERM: ${o.error}` };
        if (o.error === 'ECONNREFUSED') return { outcome: o, resets };
        if (o.error !== 'ECONNRESET' || resets === 3) return { outcome: o, resets, problem: `failed: ${o.error}` };
        o = await retry();
      }
    }

    // Requests held open across the signal: their headers accepted (100 Continue) and half their body sent.
    let releaseHeld!: () => void;
    const release = new Promise<void>((resolve) => (releaseHeld = resolve));
    const heldAgent = new Agent({ keepAlive: true });
    const body = JSON.stringify({ params: {} });
    let accepted = 0;
    const held = Array.from({ length: 4 }, () =>
      send({
        method: 'POST',
        path: '/mcp/tools/list',
        token,
        agent: heldAgent,
        held: { body, accepted: () => accepted++, release },
      }),
    );
    for (let i = 0; i < 500 && accepted < held.length; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(accepted).toBe(held.length);

    // A readiness probe whose request line and first header are in, the rest still to come: a connection in the
    // middle of a request, which shutdown does not close as idle.
    const probe = connect(Number(port), hostname);
    await new Promise((resolve) => probe.once('connect', resolve));
    let probeResponse = '';
    probe.on('data', (chunk: Buffer) => (probeResponse += chunk.toString()));
    const probeClosed = new Promise((resolve) => probe.once('close', resolve));
    probe.write(`GET /health/ready HTTP/1.1\r\nHost: ${hostname}:${port}\r\n`);

    // Sixty quick requests over six keep-alive connections; SIGTERM once a third of them are answered.
    const agent = new Agent({ keepAlive: true, maxSockets: 6 });
    const kinds = [
      { path: '/health/live' },
      { path: '/api/version' },
      { path: '/auth/me', token },
      { path: '/health/ready' },
    ];
    const fresh = (kind: (typeof kinds)[number]) => () => send({ ...kind, agent: new Agent() });
    let answered = 0;
    const quick = Array.from({ length: 60 }, async (_, i) => {
      const kind = kinds[i % kinds.length]!;
      const outcome = await send({ ...kind, agent });
      if (++answered === 20) {
        signalled = true;
        serving.child.kill('SIGTERM');
      }
      return fate(outcome, fresh(kind));
    });
    const quickFates = await Promise.all(quick);
    await serving.waitFor((l) => l.msg === 'shutting down');

    // More once shutdown has begun: on the pooled connections (if any is still open), then on new connections,
    // which the closed listener refuses while the held requests keep the process draining.
    const late = await Promise.all(kinds.map(async (kind) => fate(await send({ ...kind, agent }), fresh(kind))));
    const refused = await Promise.all(kinds.map((kind) => fresh(kind)()));
    expect(refused.map((o) => o.error)).toEqual(kinds.map(() => 'ECONNREFUSED'));

    // The probe's request completes now, during the drain: not ready, because of the shutdown.
    probe.write('\r\n');
    await probeClosed;
    expect(probeResponse).toMatch(/^HTTP\/1\.1 503 /);
    expect(probeResponse).toContain('Connection: close');
    const probeBody = JSON.parse(probeResponse.slice(probeResponse.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    expect(probeBody.ready).toBe(false);
    expect(probeBody.blocking).toEqual(expect.arrayContaining(['shutdown']));

    releaseHeld();
    const heldOutcomes = await Promise.all(held);
    for (const o of heldOutcomes) {
      expect(o).toMatchObject({ accepted: true, status: 200, complete: true });
      // Finished during the drain, and told to take its next request elsewhere.
      expect(o.headers?.connection).toBe('close');
      const tools = (JSON.parse(o.body!) as { tools: { name: string }[] }).tools.map((t) => t.name);
      expect(tools).toContain('conversation_search');
    }

    const fates = [...quickFates, ...late];
    expect(fates.filter((f) => f.problem !== undefined)).toEqual([]);
    // Idle keep-alive connections linger a moment after the signal: a request already sent on one is answered, not
    // cut unread, so no client needs to retry.
    expect(fates.map((f) => f.resets)).toEqual(fates.map(() => 0));
    const statuses = [...fates.map((f) => f.outcome), ...heldOutcomes].map((o) => o.status);
    expect(statuses).not.toContain(500);
    // The load did straddle the signal: some quick requests were answered, some found the door closed.
    expect(quickFates.filter((f) => f.outcome.status === 200).length).toBeGreaterThanOrEqual(20);
    expect(quickFates.some((f) => f.outcome.error === 'ECONNREFUSED')).toBe(true);

    agent.destroy();
    heldAgent.destroy();
    expect(await serving.exited).toBe(0);
    expect(serving.lines.map((l) => l.msg)).toContain('stopped');
    // Nothing failed inside the service either (pino: 50 is error, 60 fatal). The readiness probe's 503 during the
    // drain is the probe's answer, not a failure: a warning.
    expect(serving.lines.filter((l) => Number(l.level) >= 50)).toEqual([]);
    expect(serving.lines).toContainEqual(
      expect.objectContaining({ level: 40, url: '/health/ready', res: { statusCode: 503 } }),
    );
  }, 60_000);
});
