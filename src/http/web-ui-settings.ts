import { z } from 'zod';
import { type RouteDefinition, defineRoute } from './route.js';

/** What a web UI (playground, builder) must know before anyone signs in: how to sign in, and which model answers. */
export const WebUiSettings = z.object({
  version: z.string(),
  auth_mode: z.enum(['token', 'session']),
  sso: z.object({ enabled: z.boolean(), login_url: z.string().optional() }),
  llm_provider: z.string(),
  model: z.string(),
});
export type WebUiSettings = z.output<typeof WebUiSettings>;

/**
 * `GET <prefix>/config`, open: the UI's settings for the origin it is served from (single sign-on comes back there).
 */
export function webUiSettingsRoute<S extends z.ZodType>(options: {
  operationId: string;
  schema: S;
  settings: (origin: string) => z.output<S>;
}): RouteDefinition {
  return defineRoute({
    method: 'get',
    path: '/config',
    operationId: options.operationId,
    summary: 'How to sign in, and which model answers',
    access: 'public',
    responses: { 200: { description: 'The settings', schema: options.schema } },
    handler: ({ req }) => options.settings(`${req.protocol}://${req.get('host') ?? ''}`),
  });
}
