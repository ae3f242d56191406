import { hash, verify } from '@node-rs/argon2';

/**
 * Baseline for logins: raw argon2id in its own process, with the library and the cost parameters the service uses
 * (`@node-rs/argon2` defaults, as `hashPassword` in src/modules/users/passwords.ts calls it). A login verifies the
 * stored hash, which computes one hash with the stored parameters; so does each operation here.
 *
 * Asked `{ type: 'argon2', concurrency, seconds }`, it keeps `concurrency` verifications in flight for `seconds`
 * and answers `{ type: 'argon2-result', operations, seconds, latencies }`.
 */
const PASSWORD = 'bench-password-for-argon2';
const stored = await hash(PASSWORD);

interface Ask {
  type?: unknown;
  concurrency?: number;
  seconds?: number;
}

process.on('message', (message: Ask) => {
  if (message.type !== 'argon2') return;
  const concurrency = message.concurrency ?? 1;
  const deadline = performance.now() + (message.seconds ?? 1) * 1000;
  const latencies: number[] = [];
  const began = performance.now();
  const worker = async () => {
    while (performance.now() < deadline) {
      const start = performance.now();
      if (!(await verify(stored, PASSWORD))) throw new Error('argon2 verification failed');
      latencies.push(performance.now() - start);
    }
  };
  void Promise.all(Array.from({ length: concurrency }, worker)).then(() => {
    process.send?.({
      type: 'argon2-result',
      operations: latencies.length,
      seconds: (performance.now() - began) / 1000,
      latencies,
    });
  });
});
// The probe unreferences the IPC channel; this process lives to answer it, until the harness stops it.
setInterval(() => undefined, 60_000);
process.send?.({ type: 'ready' });
process.once('SIGTERM', () => process.exit(0));
