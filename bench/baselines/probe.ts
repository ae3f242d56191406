// Bench-only probe, preloaded into every benchmarked child (the service and each baseline) with
// `node --expose-gc --import <probe>`. Answers `{ type: 'memory', id }` on the IPC channel with the child's memory
// after a full garbage collection, so the harness reads comparable heap and RSS figures from every child.
// It lives among the baselines because it is transpiled and run the same way (plain node, no loader).

const collect = (globalThis as { gc?: () => void }).gc;

if (process.send) {
  process.on('message', (message: { type?: unknown; id?: unknown } | null) => {
    if (message?.type !== 'memory') return;
    // Twice: the first collection may only queue finalizers whose memory the second one frees.
    collect?.();
    collect?.();
    process.send?.({ type: 'memory', id: message.id, usage: process.memoryUsage() });
  });
  // The channel must not keep a child alive that would otherwise exit.
  process.channel?.unref();
}
