const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'short' });
const TIME = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const CLOCK = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const NUMBER = new Intl.NumberFormat();

function toDate(value: string | number | Date): Date | null {
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** "5 min ago", "yesterday"; falls back to a date for anything older than a week. */
export function formatRelative(value: string | number | Date, now = Date.now()): string {
  const date = toDate(value);
  if (!date) return '';
  const seconds = Math.round((date.getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return 'just now';
  if (abs < 3600) return RELATIVE.format(Math.round(seconds / 60), 'minute');
  if (abs < 86_400) return RELATIVE.format(Math.round(seconds / 3600), 'hour');
  if (abs < 7 * 86_400) return RELATIVE.format(Math.round(seconds / 86_400), 'day');
  return DATE_TIME.format(date);
}

export function formatTime(value: string | number | Date): string {
  const date = toDate(value);
  return date ? TIME.format(date) : '';
}

/** The time of day for today's moments, with the date for older ones. */
export function formatMoment(value: string | number | Date, now = new Date()): string {
  const date = toDate(value);
  if (!date) return '';
  return date.toDateString() === now.toDateString() ? CLOCK.format(date) : DATE_TIME.format(date);
}

export function formatDateTime(value: string | number | Date): string {
  const date = toDate(value);
  return date ? DATE_TIME.format(date) : '';
}

/** 12 ms, 840 ms, 1.24 s, 2 min 5 s. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatNumber(value: number): string {
  return Number.isFinite(value) ? NUMBER.format(value) : '–';
}

/** Pretty JSON for arguments and results; strings that hold JSON are parsed first. */
export function prettyJson(value: unknown): string {
  if (typeof value === 'string') {
    const trimmed = value.trim();
    if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
      try {
        return JSON.stringify(JSON.parse(trimmed), null, 2);
      } catch {
        return value;
      }
    }
    return value;
  }
  if (value === undefined) return '';
  try {
    // undefined for functions and symbols, which JSON has no form for.
    return JSON.stringify(value, null, 2) ?? `(${typeof value})`;
  } catch {
    return '(a value that cannot be shown as JSON)';
  }
}
