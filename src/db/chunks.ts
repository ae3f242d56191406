/** `IN (…)` lists are cut into chunks this long (SQLite and PostgreSQL cap bound parameters). */
export const IN_LIST_CHUNK = 500;

/** `items` cut into consecutive slices of at most `size`. */
export function chunks<T>(items: readonly T[], size = IN_LIST_CHUNK): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}
