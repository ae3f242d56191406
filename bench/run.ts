import { type BenchLine, benchHttpStack } from './http-stack.js';
import { benchMcp } from './mcp.js';
import { benchScim } from './scim.js';

/**
 * Runs every benchmark and prints each result as a ratio against the baseline measured in the same run (the
 * machine is shared and noisy: absolute numbers vary, ratios much less). Exits non-zero when a ratio is under
 * its target.
 */
function print(title: string, lines: BenchLine[]): boolean {
  process.stdout.write(`\n${title}\n`);
  let ok = true;
  for (const { name, result, ratio, target } of lines) {
    // A run with failed requests measured the wrong thing, however fast it was.
    const pass = ratio >= target && result.errors === 0;
    ok &&= pass;
    process.stdout.write(
      `  ${name.padEnd(44)} ${result.rps.toFixed(0).padStart(7)} req/s  p50 ${result.p50ms.toFixed(2)} ms  ` +
        `p99 ${result.p99ms.toFixed(2)} ms  ratio ${ratio.toFixed(2)} (target ≥ ${target})${pass ? '' : '  BELOW TARGET'}` +
        `${result.errors > 0 ? `  ${result.errors} errors` : ''}\n`,
    );
  }
  return ok;
}

const results = [
  print('HTTP plumbing vs bare express (loopback, 32 keep-alive connections)', await benchHttpStack()),
  print('MCP requests vs a bare express JSON route (loopback, 16 keep-alive connections)', await benchMcp()),
  print('SCIM GET /Users over 100,000 users vs its unfiltered first page (loopback, 8 connections)', await benchScim()),
];
process.exitCode = results.every(Boolean) ? 0 : 1;
