import { afterAll, beforeAll } from 'vitest';

/**
 * Test files share their worker process (vitest.config.ts: `isolate: false`), so a file must leave nothing running
 * behind it: a server still listening (an app not closed, whose timers go on working) or a child process would
 * run on into the next file and take its CPU, or its ports. This fails the file that leaves one.
 *
 * It compares the servers and child processes alive after the file with those alive before it. Closing is often
 * finished a moment after the close call returns (a child reports its exit, a server's last connection ends), so
 * the check waits a little for the count to come back before it fails.
 *
 * Not counted: connections (one whose server is gone is inert, and an app's outbound HTTP client may keep one
 * after the app has closed; one to something still running is found through that something), and timers, which
 * vitest itself starts and ends at any moment. A leaked timer that fails when it fires is reported by vitest as an
 * unhandled error of the run.
 */

const SETTLE_MS = 2_000;
const POLL_MS = 20;

/** Listening servers, child processes and UDP sockets, as `process.getActiveResourcesInfo` names them. */
const WATCHED = new Set(['TCPServerWrap', 'PipeServerWrap', 'ProcessWrap', 'UDPWrap']);

function alive(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) {
    if (WATCHED.has(kind)) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return counts;
}

function excess(before: Map<string, number>): string[] {
  const found: string[] = [];
  for (const [kind, count] of alive()) {
    const extra = count - (before.get(kind) ?? 0);
    if (extra > 0) found.push(`${extra} × ${kind}`);
  }
  return found;
}

let before = new Map<string, number>();

beforeAll(() => {
  before = alive();
});

afterAll(async () => {
  const deadline = Date.now() + SETTLE_MS;
  let left = excess(before);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    left = excess(before);
  }
  if (left.length > 0) throw new Error(`the file left running behind it: ${left.join(', ')}`);
}, SETTLE_MS + 5_000);
