import { stringify } from 'csv-stringify/sync';
import type { DataExport } from './data-subject.service.js';

/** The columns of the CSV export: one row per field of one record of one section. */
export const CSV_COLUMNS = ['section', 'record', 'field', 'value'] as const;

/** Cells a spreadsheet would read as a formula (or that begin with a control character it would act on). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * Makes a cell safe to open in a spreadsheet (OWASP "CSV injection"): a leading apostrophe keeps a value such as
 * `=HYPERLINK(…)` text.
 */
export function neutralizeFormula(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text;
}

/** How one value reads in a cell: null as empty, objects (preferences, transcripts) as JSON, the rest as text. */
function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * The data export as one CSV file (RFC 4180: CRLF, fields quoted where they must be). It holds exactly what the
 * JSON export does, flattened: the top-level fields are section `export`, the profile section `profile`, and each
 * list a section with one record (numbered from 1) per item.
 */
export function dataExportCsv(data: DataExport): string {
  const rows: string[][] = [];
  const add = (section: string, record: number, fields: object) => {
    for (const [field, value] of Object.entries(fields)) {
      rows.push([section, String(record), field, neutralizeFormula(cellText(value))]);
    }
  };
  // The export's fields first, then its profile, then each list in the export's order.
  const { profile, ...rest } = data;
  const entries = Object.entries(rest);
  add('export', 1, Object.fromEntries(entries.filter(([, value]) => !Array.isArray(value))));
  add('profile', 1, profile);
  for (const [section, items] of entries) {
    if (Array.isArray(items)) (items as object[]).forEach((item, i) => add(section, i + 1, item));
  }
  return stringify(rows, { header: true, columns: [...CSV_COLUMNS], record_delimiter: 'windows' });
}
