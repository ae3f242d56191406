import { writeFileSync } from 'node:fs';
import { type RoundFigures, type Stats, failures } from './load.js';

/**
 * What each case found: one row per target, printed as a table (or as JSON, `--json`) and written to
 * bench/results.json. `pass` is null for figures reported without a target and for cases that could not run here
 * (their reason is printed).
 */

/** What a load measured: 2xx answers per second, and latency percentiles in milliseconds (the medians of its rounds). */
export interface Figures extends RoundFigures {
  /** wrk's p99 with its correction for coordinated omission, where wrk made the load (see bench/load.ts). */
  p99Corrected?: number;
  /** Each round's own figures, where the others are medians over interleaved rounds. */
  rounds?: RoundFigures[];
}

export interface Row {
  section: string;
  name: string;
  value: number | null;
  unit: string;
  baseline: number | null;
  ratio: number | null;
  /** Human-readable, e.g. `ratio >= 0.9` or `value <= 120 MB`; null when only reported. */
  target: string | null;
  pass: boolean | null;
  /** The load behind a figure, ours and the baseline's, where one was measured. */
  load?: Figures;
  baselineLoad?: Figures;
  note?: string;
}

export type Rows = Row[];

export const figures = ({ rps, p50, p99, p99Corrected, rounds }: Stats): Figures => ({
  rps,
  p50,
  p99,
  ...(p99Corrected !== undefined && { p99Corrected }),
  ...(rounds && { rounds }),
});

const problems = (...stats: Stats[]): string | undefined => {
  const bad = stats.reduce((n, s) => n + failures(s), 0);
  return bad > 0 ? `${bad} errors/non-2xx answers: measured the wrong thing` : undefined;
};

/** Subject req/s against its baseline's, passing at `ratio >= min` and only without errors or non-2xx answers. */
export function throughputRow(
  section: string,
  name: string,
  subject: Stats,
  baseline: Stats,
  min: number | null,
  note?: string,
): Row {
  const ratio = subject.rps / baseline.rps;
  const trouble = problems(subject, baseline);
  return {
    section,
    name,
    value: subject.rps,
    unit: 'req/s',
    baseline: baseline.rps,
    ratio,
    target: min === null ? null : `ratio >= ${min}`,
    pass: trouble ? false : min === null ? null : ratio >= min,
    load: figures(subject),
    baselineLoad: figures(baseline),
    ...((trouble ?? note) && { note: [trouble, note].filter(Boolean).join('; ') }),
  };
}

/**
 * p99/p50 of a load, against the same of its baseline; passing at `<= max`, and with `maxP99` also only while the
 * p99 itself stays at or under that many milliseconds.
 */
export function tailRow(
  section: string,
  name: string,
  subject: Stats,
  baseline: Stats | null,
  max: number | null,
  maxP99?: number,
): Row {
  const value = subject.p99 / subject.p50;
  const base = baseline ? baseline.p99 / baseline.p50 : null;
  const trouble = problems(subject, ...(baseline ? [baseline] : []));
  const bounds = [max !== null && `value <= ${max}`, maxP99 !== undefined && `p99 <= ${maxP99} ms`].filter(Boolean);
  const met = (max === null || value <= max) && (maxP99 === undefined || subject.p99 <= maxP99);
  const corrected =
    subject.p99Corrected === undefined
      ? undefined
      : `wrk's p99 with its correction for coordinated omission: ${subject.p99Corrected.toPrecision(4)} ms` +
        (baseline?.p99Corrected === undefined ? '' : ` (baseline ${baseline.p99Corrected.toPrecision(4)} ms)`);
  // A tail is a median of rounds' p99s: one round's pause shows here, beside the others.
  const perRound =
    subject.rounds && subject.rounds.length > 1
      ? `p99 by round ${subject.rounds.map((r) => r.p99.toPrecision(3)).join(', ')} ms`
      : undefined;
  const note = [trouble, perRound, corrected].filter(Boolean).join('; ');
  return {
    section,
    name,
    value,
    unit: 'x',
    baseline: base,
    ratio: base === null ? null : value / base,
    target: bounds.length === 0 ? null : bounds.join(' and '),
    pass: trouble ? false : bounds.length === 0 ? null : met,
    load: figures(subject),
    ...(baseline && { baselineLoad: figures(baseline) }),
    ...(note && { note }),
  };
}

/** A load's req/s and latencies, reported without a baseline or a target (failing only on errors). */
export function loadRow(section: string, name: string, subject: Stats, note?: string): Row {
  const trouble = problems(subject);
  return {
    section,
    name,
    value: subject.rps,
    unit: 'req/s',
    baseline: null,
    ratio: null,
    target: null,
    pass: trouble ? false : null,
    load: figures(subject),
    ...((trouble ?? note) && { note: [trouble, note].filter(Boolean).join('; ') }),
  };
}

/** A figure with an upper bound on its value (`null` max: reported only). */
export function valueRow(
  section: string,
  name: string,
  value: number,
  unit: string,
  max: number | null,
  extra: { baseline?: number; note?: string; failed?: string } = {},
): Row {
  const baseline = extra.baseline ?? null;
  return {
    section,
    name,
    value,
    unit,
    baseline,
    ratio: baseline === null || baseline === 0 ? null : value / baseline,
    target: max === null ? null : `value <= ${max} ${unit}`,
    pass: extra.failed ? false : max === null ? null : value <= max,
    ...((extra.failed ?? extra.note) && { note: [extra.failed, extra.note].filter(Boolean).join('; ') }),
  };
}

/** A ratio with an upper bound (`value / baseline <= max`). */
export function ratioAtMostRow(
  section: string,
  name: string,
  value: number,
  baseline: number,
  unit: string,
  max: number,
  note?: string,
): Row {
  const ratio = value / baseline;
  return {
    section,
    name,
    value,
    unit,
    baseline,
    ratio,
    target: `ratio <= ${max}`,
    pass: ratio <= max,
    ...(note && { note }),
  };
}

/** A case that could not run, or broke: no value, and the reason. */
export function notRunRow(section: string, name: string, reason: string, pass: false | null = null): Row {
  return { section, name, value: null, unit: '', baseline: null, ratio: null, target: null, pass, note: reason };
}

const fmt = (value: number | null | undefined, unit = ''): string => {
  if (value === null || value === undefined || !Number.isFinite(value)) return '-';
  const digits = Math.abs(value) >= 1000 ? 0 : Math.abs(value) >= 100 ? 1 : Math.abs(value) >= 10 ? 2 : 3;
  return `${value.toFixed(digits)}${unit ? ` ${unit}` : ''}`;
};

const passText = (row: Row): string =>
  row.pass === true ? 'PASS' : row.pass === false ? 'FAIL' : row.value === null ? 'n/a' : 'report';

/** Prints every section as a table, then the notes, then `N of M targets met`. */
export function printTable(rows: Rows, out: (text: string) => void): void {
  const header = ['case', 'value', 'p50 ms', 'p99 ms', 'p99/p50', 'baseline', 'ratio', 'target', 'pass'];
  const cells = (row: Row): string[] => [
    row.name,
    fmt(row.value, row.unit),
    fmt(row.load?.p50),
    fmt(row.load?.p99),
    row.load ? fmt(row.load.p99 / row.load.p50) : '-',
    fmt(row.baseline, row.unit),
    fmt(row.ratio),
    row.target ?? '-',
    passText(row),
  ];
  const table = [header, ...rows.map(cells)];
  const widths = header.map((_, i) => Math.max(...table.map((line) => line[i]!.length)));
  const line = (values: string[]) =>
    values.map((v, i) => (i === 0 || i === 7 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  let section: string | undefined;
  for (const row of rows) {
    if (row.section !== section) {
      section = row.section;
      out(`\n${section}\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
    }
    out(`${line(cells(row))}\n`);
  }
  const notes = rows.filter((row) => row.note);
  if (notes.length > 0) {
    out('\nNotes\n');
    for (const row of notes) out(`  ${row.name}: ${row.note}\n`);
  }
  const { met, targeted, notRun } = summarize(rows);
  out(`\n${met} of ${targeted} targets met${notRun > 0 ? ` (${notRun} case(s) could not run here)` : ''}\n`);
}

/** Targets met, targets set (a broken case counts as one missed), and cases that could not run here. */
export function summarize(rows: Rows): { met: number; targeted: number; notRun: number } {
  const targeted = rows.filter((row) => row.target !== null || row.pass === false);
  return {
    met: targeted.filter((row) => row.pass === true).length,
    targeted: targeted.length,
    notRun: rows.filter((row) => row.value === null && row.pass === null).length,
  };
}

const round = (v: number | null | undefined): number | null =>
  v === null || v === undefined || !Number.isFinite(v) ? null : Math.round(v * 1000) / 1000;

const roundsJson = (load: Figures | undefined) =>
  load?.rounds?.map((r) => ({ rps: round(r.rps), p50: round(r.p50), p99: round(r.p99) })) ?? null;

/**
 * A row as JSON, in bench/results.json and in `--json`: `name` (section: case), `value`, `unit`, `baseline`,
 * `ratio`, `target`, `pass` as always; the load behind it, ours (`rps`, `p50`, `p99`, `p99Corrected`) and the
 * baseline's (`baselineRps`, `baselineP50`, `baselineP99`, `baselineP99Corrected`), each null where not measured
 * (milliseconds, 2xx answers per second; `p99Corrected` is wrk's own, with its correction for coordinated omission);
 * where those are medians of interleaved rounds, each round's own (`rounds`, `baselineRounds`: `rps`, `p50`, `p99`);
 * `section`, `case` and `note`.
 */
export function rowJson(row: Row) {
  return {
    name: `${row.section}: ${row.name}`,
    value: round(row.value),
    unit: row.unit,
    baseline: round(row.baseline),
    ratio: round(row.ratio),
    target: row.target,
    pass: row.pass,
    rps: round(row.load?.rps),
    p50: round(row.load?.p50),
    p99: round(row.load?.p99),
    p99Corrected: round(row.load?.p99Corrected),
    baselineRps: round(row.baselineLoad?.rps),
    baselineP50: round(row.baselineLoad?.p50),
    baselineP99: round(row.baselineLoad?.p99),
    baselineP99Corrected: round(row.baselineLoad?.p99Corrected),
    rounds: roundsJson(row.load),
    baselineRounds: roundsJson(row.baselineLoad),
    section: row.section,
    case: row.name,
    note: row.note ?? null,
  };
}

/** bench/results.json: one `rowJson` per row. */
export function writeResults(rows: Rows, file: string): void {
  writeFileSync(file, `${JSON.stringify(rows.map(rowJson), null, 2)}\n`);
}
