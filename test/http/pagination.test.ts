import { describe, expect, it } from 'vitest';
import { pageMeta, paginationQuery } from '../../src/http/pagination.js';

const query = paginationQuery(20);

describe('shared pagination model', () => {
  it('defaults to the first page of the default size', () => {
    expect(query.parse({})).toEqual({ offset: 0, limit: 20 });
  });

  it('derives the offset from page and page_size', () => {
    expect(query.parse({ page: '3', page_size: '50' })).toEqual({ offset: 100, limit: 50 });
  });

  it('takes offset and limit as given', () => {
    expect(query.parse({ offset: '7', limit: '5' })).toEqual({ offset: 7, limit: 5 });
  });

  it('refuses page sizes over 1000, page 0 and negative offsets', () => {
    expect(query.safeParse({ page_size: '1001' }).success).toBe(false);
    expect(query.safeParse({ limit: '1001' }).success).toBe(false);
    expect(query.safeParse({ page: '0' }).success).toBe(false);
    expect(query.safeParse({ offset: '-1' }).success).toBe(false);
    expect(query.safeParse({ limit: 'ten' }).success).toBe(false);
  });

  it('refuses mixing the two styles', () => {
    const result = query.safeParse({ page: '2', limit: '10' });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe('page/page_size and offset/limit cannot be combined');
  });

  it('reports totals and neighbours', () => {
    expect(pageMeta(45, { offset: 20, limit: 20 })).toEqual({
      total: 45,
      page: 2,
      page_size: 20,
      total_pages: 3,
      has_next: true,
      has_prev: true,
    });
    expect(pageMeta(0, { offset: 0, limit: 20 })).toEqual({
      total: 0,
      page: 1,
      page_size: 20,
      total_pages: 0,
      has_next: false,
      has_prev: false,
    });
    expect(pageMeta(40, { offset: 20, limit: 20 }).has_next).toBe(false);
  });
});
