import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The service's logger, in a process of its own writing to a pipe as the service writes to its stdout: lines go
 * out in batches rather than one write each, none waits long, and none is lost when the process exits.
 */

const LOGGER = pathToFileURL(join(import.meta.dirname, '../src/logger.ts')).href;

/** Runs `script` (an ES module with `logger` in scope) and answers each chunk its stdout delivered, with its time. */
async function chunksOf(script: string): Promise<{ at: number; text: string }[]> {
  const source = `import { createLogger } from ${JSON.stringify(LOGGER)};
const logger = createLogger({ level: 'info' });
${script}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', source], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const chunks: { at: number; text: string }[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push({ at: performance.now(), text: chunk.toString('utf8') }));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  expect(code).toBe(0);
  return chunks;
}

const linesOf = (chunks: { text: string }[]) =>
  chunks
    .map((c) => c.text)
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { msg: string; n?: number });

describe('the service logger', () => {
  it('writes lines logged one at a time in batches, and every one of them by exit', async () => {
    // A line a millisecond, as a busy service logs its requests.
    const chunks = await chunksOf(`
for (let n = 0; n < 200; n++) {
  logger.info({ n }, 'request completed');
  await new Promise((resolve) => setTimeout(resolve, 1));
}`);
    expect(linesOf(chunks).map((line) => line.n)).toEqual([...Array(200).keys()]);
    expect(chunks.length).toBeLessThan(40);
  });

  it('writes a line of a quiet service within a moment', async () => {
    const chunks = await chunksOf(`
logger.info('alone');
await new Promise((resolve) => setTimeout(resolve, 1000));
logger.info('exiting');`);
    const [first, last] = linesOf(chunks);
    expect(first?.msg).toBe('alone');
    expect(last?.msg).toBe('exiting');
    // The first line arrived on its own, well before the process logged again a second later.
    expect(chunks[0]!.text).not.toContain('exiting');
    expect(chunks.at(-1)!.at - chunks[0]!.at).toBeGreaterThan(500);
  });
});
