// Bench-only probe, preloaded into every benchmarked child (the service and each baseline) with
// `node --expose-gc --import <probe>`. Answers `{ type: 'memory', id }` on the IPC channel with the child's memory
// after a full garbage collection, so the harness reads comparable heap and RSS figures from every child.
// It lives among the baselines because it is transpiled and run the same way (plain node, no loader).

const collect = (globalThis as { gc?: () => void }).gc;
/** How long after the collections the memory is read. */
const SETTLE_MS = 100;

if (process.send) {
  process.on('message', (message: { type?: unknown; id?: unknown } | null) => {
    if (message?.type !== 'memory') return;
    // Twice: the first collection may only queue finalizers whose memory the second one frees.
    collect?.();
    collect?.();
    // A full collection moves live objects to new pages and gives the old ones back from a background thread within
    // a few milliseconds: read at once, RSS still counts them (some 35 MB after a load, as measured). The answer
    // waits until they are gone, so that the harness's reading of /proc, made on receipt, sees what the process
    // holds rather than the collection it was asked for.
    setTimeout(() => process.send?.({ type: 'memory', id: message.id, usage: process.memoryUsage() }), SETTLE_MS);
  });
  // The channel must not keep a child alive that would otherwise exit.
  process.channel?.unref();
}
