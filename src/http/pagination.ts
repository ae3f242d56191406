import { z } from 'zod';

/**
 * The shared pagination model (spec "Pagination model"): a client pages either by `page`/`page_size` or by
 * `offset`/`limit`, never both; pages are at most 1000 items. Responses carry total, total_pages, has_next and
 * has_prev.
 */
export const MAX_PAGE_SIZE = 1000;

const count = (min: number) => z.coerce.number().int().min(min);

export function paginationQuery(defaultPageSize = 20) {
  return z
    .object({
      page: count(1).optional().describe('1-based page number (with page_size)'),
      page_size: count(1).max(MAX_PAGE_SIZE).optional().describe(`Items per page, default ${defaultPageSize}`),
      offset: count(0).optional().describe('Items to skip (with limit)'),
      limit: count(1).max(MAX_PAGE_SIZE).optional().describe(`Items to return, default ${defaultPageSize}`),
    })
    .refine(
      (q) =>
        !((q.page !== undefined || q.page_size !== undefined) && (q.offset !== undefined || q.limit !== undefined)),
      {
        message: 'page/page_size and offset/limit cannot be combined',
        path: ['offset'],
      },
    )
    .transform((q) => {
      if (q.offset !== undefined || q.limit !== undefined) {
        return { offset: q.offset ?? 0, limit: q.limit ?? defaultPageSize };
      }
      const pageSize = q.page_size ?? defaultPageSize;
      return { offset: ((q.page ?? 1) - 1) * pageSize, limit: pageSize };
    });
}

export interface PageWindow {
  offset: number;
  limit: number;
}

export const PageMetaSchema = z
  .object({
    total: z.number().int(),
    page: z.number().int(),
    page_size: z.number().int(),
    total_pages: z.number().int(),
    has_next: z.boolean(),
    has_prev: z.boolean(),
  })
  .meta({ id: 'PageMeta' });

export type PageMeta = z.infer<typeof PageMetaSchema>;

/** The metadata of one window over `total` items. An offset that is not a multiple of the limit rounds down. */
export function pageMeta(total: number, { offset, limit }: PageWindow): PageMeta {
  return {
    total,
    page: Math.floor(offset / limit) + 1,
    page_size: limit,
    total_pages: Math.ceil(total / limit),
    has_next: offset + limit < total,
    has_prev: offset > 0,
  };
}
