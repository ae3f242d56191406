import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './service.js';

/**
 * `--profile`: what the service's CPU profiles (`node --cpu-prof`, V8's .cpuprofile JSON) say, summed up as self
 * time per function (name, url:line), so that a run shows where the service's busy time went without opening
 * DevTools. The profiles themselves are kept for that.
 */

/** The part of a .cpuprofile read here. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

export interface FunctionTime {
  name: string;
  /** `url:line`, the url relative to the project when inside it; empty for V8's own entries ((program), GC). */
  location: string;
  selfMs: number;
  /** Of the busy time (everything but `(idle)`). */
  percent: number;
}

export interface ProfileSummary {
  file: string;
  /** Sampled time, and the part of it not idle, in milliseconds. */
  totalMs: number;
  busyMs: number;
  top: FunctionTime[];
}

const PROJECT = pathToFileURL(ROOT).href;

function location(url: string, lineNumber: number): string {
  if (!url) return '';
  const short = url.startsWith(PROJECT) ? url.slice(PROJECT.length) : url;
  return lineNumber >= 0 ? `${short}:${lineNumber + 1}` : short;
}

/**
 * Self time per function of one profile: each sample's node is charged the time until the next sample (V8 records
 * the time since the previous one), functions with the same name and place summed, largest first.
 */
export function summarizeProfile(file: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const keyOf = new Map<number, string>();
  const frames = new Map<string, { name: string; location: string }>();
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    const where = location(url, lineNumber);
    const key = `${name}\u0000${where}`;
    keyOf.set(node.id, key);
    frames.set(key, { name, location: where });
  }
  const self = new Map<string, number>();
  let totalUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i + 1] ?? 0;
    const key = keyOf.get(profile.samples[i]!);
    if (key === undefined) continue;
    self.set(key, (self.get(key) ?? 0) + us);
    totalUs += us;
  }
  const idleUs = [...self].filter(([key]) => frames.get(key)!.name === '(idle)').reduce((n, [, us]) => n + us, 0);
  const busyUs = totalUs - idleUs;
  const ranked = [...self]
    .filter(([key]) => frames.get(key)!.name !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, us]) => ({
      ...frames.get(key)!,
      selfMs: us / 1000,
      percent: busyUs > 0 ? (100 * us) / busyUs : 0,
    }));
  return { file, totalMs: totalUs / 1000, busyMs: busyUs / 1000, top: ranked };
}

/** Every .cpuprofile in `dir`, in the order their services started (their names begin with that order). */
export function summarizeProfiles(dir: string, top = 15): ProfileSummary[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort()
    .map((name) => summarizeProfile(join(dir, name), top));
}

/** One table per profile: rank, self time, share of busy time, function, url:line. */
export function printProfiles(dir: string, summaries: ProfileSummary[], out: (text: string) => void): void {
  out(`\nCPU profiles (node --cpu-prof) of the service, kept in ${dir}\n`);
  if (summaries.length === 0) out('  none were written (did a service start, and stop cleanly?)\n');
  for (const summary of summaries) {
    out(
      `\n${summary.file}\n  ${(summary.busyMs / 1000).toFixed(1)} s busy of ${(summary.totalMs / 1000).toFixed(1)} s ` +
        `sampled; top ${summary.top.length} functions by self time\n`,
    );
    const lines = summary.top.map((f, i) => [
      String(i + 1),
      `${f.selfMs.toFixed(0)} ms`,
      `${f.percent.toFixed(1)} %`,
      f.name,
      f.location,
    ]);
    const widths = [0, 1, 2, 3].map((i) => Math.max(...lines.map((line) => line[i]!.length)));
    for (const line of lines)
      out(
        `  ${line[0]!.padStart(widths[0]!)}  ${line[1]!.padStart(widths[1]!)}  ${line[2]!.padStart(widths[2]!)}  ` +
          `${line[3]!.padEnd(widths[3]!)}  ${line[4]}\n`,
      );
  }
}
