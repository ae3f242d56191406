import { startArgon2 } from '../baseline-servers.js';
import { JSON_HEADERS, bearer } from '../client.js';
import type { Context } from '../context.js';
import { type Stats, type Target, failures, medianStats, runLoad } from '../load.js';
import { type Row, ratioAtMostRow, throughputRow } from '../report.js';
import { LOGIN_USER, type Service } from '../service.js';

/**
 * Password logins: how close `POST /auth/login` (correct password, a few at once) comes to raw argon2id in a
 * process of its own with the same library, parameters, thread-pool size and concurrency; and how much a burst of
 * logins disturbs the tail latency of other requests (`GET /auth/me` at a moderate fixed rate).
 */

const SECTION = 'Logins (POST /auth/login, argon2id)';

function loginTarget(service: Service, connections: number): Target {
  return {
    name: 'POST /auth/login',
    url: `${service.main}/auth/login`,
    method: 'POST',
    headers: JSON_HEADERS,
    body: JSON.stringify(LOGIN_USER),
    connections,
  };
}

/** logins/s against argon2 verifications/s, in interleaved rounds (argon2, login, argon2, login, …). */
export async function loginThroughputRow(ctx: Context, service: Service): Promise<Row> {
  const { loginConcurrency: concurrency, loginSeconds: seconds, rounds } = ctx.settings;
  const argon2 = await startArgon2(ctx.logDir);
  try {
    const hashes = async (): Promise<Stats> => {
      const reply = argon2.message<{ operations: number; seconds: number; latencies: number[] }>(
        'argon2-result',
        60_000,
      );
      argon2.send({ type: 'argon2', concurrency, seconds });
      const { operations, seconds: took, latencies } = await reply;
      const sorted = [...latencies].sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
      return {
        rps: operations / took,
        p50: at(0.5),
        p99: at(0.99),
        ok: operations,
        errors: 0,
        non2xx: 0,
        seconds: took,
      };
    };
    const login = loginTarget(service, concurrency);
    ctx.log(`logins: ${rounds} interleaved rounds of ${seconds} s at concurrency ${concurrency}`);
    await hashes();
    await runLoad(login, { seconds: Math.min(1, seconds) });
    const base: Stats[] = [];
    const ours: Stats[] = [];
    for (let round = 0; round < rounds; round++) {
      base.push(await hashes());
      ours.push(await runLoad(login, { seconds }));
    }
    return {
      ...throughputRow(
        SECTION,
        `logins/s vs argon2id verifications/s, c=${concurrency}`,
        medianStats(ours),
        medianStats(base),
        0.9,
      ),
      unit: 'req/s',
    };
  } finally {
    await argon2.stop();
  }
}

/** p99 of GET /auth/me at a moderate rate, alone and while a burst of logins runs. */
export async function loginBurstRow(ctx: Context, service: Service, token: string, meRps: number): Promise<Row> {
  const seconds = Math.max(2, ctx.settings.loginSeconds);
  // Moderate: a fifth of what the route sustained at 50 connections in this run.
  const rate = Math.max(50, Math.round(meRps / 5));
  const me: Target = {
    name: 'GET /auth/me',
    url: `${service.main}/auth/me`,
    headers: bearer(token),
    connections: 10,
    rate,
  };
  ctx.log(`login burst: GET /auth/me at ${rate} req/s for ${seconds} s, alone then with 8 concurrent logins`);
  const alone = await runLoad(me, { seconds });
  const [during, logins] = await Promise.all([runLoad(me, { seconds }), runLoad(loginTarget(service, 8), { seconds })]);
  const bad = failures(alone) + failures(during) + failures(logins);
  const row = ratioAtMostRow(
    SECTION,
    `GET /auth/me p99 during a login burst (${rate} req/s; ${Math.round(logins.rps)} logins/s)`,
    during.p99,
    alone.p99,
    'ms',
    2,
    bad > 0 ? `${bad} errors/non-2xx answers` : undefined,
  );
  return bad > 0 ? { ...row, pass: false } : row;
}
