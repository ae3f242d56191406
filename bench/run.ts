import { type BenchLine, benchHttpStack } from './http-stack.js';

/**
 * Runs every benchmark and prints each result as a ratio against the baseline measured in the same run (the
 * machine is shared and noisy: absolute numbers vary, ratios much less). Exits non-zero when a ratio is under
 * its target.
 */
function print(title: string, lines: BenchLine[]): boolean {
  process.stdout.write(`\n${title}\n`);
  let ok = true;
  for (const { name, result, ratio, target } of lines) {
    const pass = ratio >= target;
    ok &&= pass;
    process.stdout.write(
      `  ${name.padEnd(44)} ${result.rps.toFixed(0).padStart(7)} req/s  p50 ${result.p50ms.toFixed(2)} ms  ` +
        `p99 ${result.p99ms.toFixed(2)} ms  ratio ${ratio.toFixed(2)} (target ≥ ${target})${pass ? '' : '  BELOW TARGET'}` +
        `${result.errors > 0 ? `  ${result.errors} errors` : ''}\n`,
    );
  }
  return ok;
}

const ok = print('HTTP plumbing vs bare express (loopback, 32 keep-alive connections)', await benchHttpStack());
process.exitCode = ok ? 0 : 1;
