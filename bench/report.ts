import { writeFileSync } from 'node:fs';
import { type Stats, failures } from './load.js';

/**
 * What each case found: one row per target, printed as a table and written to bench/results.json. `pass` is null
 * for figures reported without a target and for cases that could not run here (their reason is printed).
 */
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
  /** Latencies behind a throughput figure, for the table. */
  latency?: { p50: number; p99: number };
  note?: string;
}

export type Rows = Row[];

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
    latency: { p50: subject.p50, p99: subject.p99 },
    ...((trouble ?? note) && { note: [trouble, note].filter(Boolean).join('; ') }),
  };
}

/** p99/p50 of a load, against the same of its baseline; passing at `<= max`. */
export function tailRow(
  section: string,
  name: string,
  subject: Stats,
  baseline: Stats | null,
  max: number | null,
): Row {
  const value = subject.p99 / subject.p50;
  const base = baseline ? baseline.p99 / baseline.p50 : null;
  const trouble = problems(subject, ...(baseline ? [baseline] : []));
  return {
    section,
    name,
    value,
    unit: 'x',
    baseline: base,
    ratio: base === null ? null : value / base,
    target: max === null ? null : `value <= ${max}`,
    pass: trouble ? false : max === null ? null : value <= max,
    latency: { p50: subject.p50, p99: subject.p99 },
    ...(trouble && { note: trouble }),
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
    fmt(row.latency?.p50),
    fmt(row.latency?.p99),
    row.latency ? fmt(row.latency.p99 / row.latency.p50) : '-',
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
  const targeted = rows.filter((row) => row.target !== null || row.pass === false);
  const met = targeted.filter((row) => row.pass === true).length;
  const skipped = rows.filter((row) => row.value === null && row.pass === null).length;
  out(`\n${met} of ${targeted.length} targets met${skipped > 0 ? ` (${skipped} case(s) could not run here)` : ''}\n`);
}

/** bench/results.json: `{ name, value, unit, baseline, ratio, target, pass }` per row. */
export function writeResults(rows: Rows, file: string): void {
  const round = (v: number | null) => (v === null || !Number.isFinite(v) ? null : Math.round(v * 1000) / 1000);
  const results = rows.map((row) => ({
    name: `${row.section}: ${row.name}`,
    value: round(row.value),
    unit: row.unit,
    baseline: round(row.baseline),
    ratio: round(row.ratio),
    target: row.target,
    pass: row.pass,
  }));
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}
