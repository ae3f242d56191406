import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Response, type Router } from 'express';

/**
 * A web UI's strict Content Security Policy: its own origin only, no inline script or style, no framing. Styles
 * set from script (CSSOM) are allowed by it; `style` attributes in markup are not.
 */
export const STRICT_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join('; ');

/** The folder a built web UI is in: `dist/web/<name>` of the package, from the sources or the build alike. */
export function builtWebRoot(name: string): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return resolve(dir, 'dist', 'web', name);
}

function protect(res: Response): void {
  res.setHeader('Content-Security-Policy', STRICT_CSP);
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
}

/**
 * Serves a built single-page UI at `/`: its hashed assets cached for a year (a new build has new names), the page
 * itself revalidated every time, and every answer under the strict CSP. Without a build, `/` says how to make one.
 */
export function staticSite(options: { root: string; title: string }): Router {
  const router = express.Router();
  const index = join(options.root, 'index.html');
  router.use(
    '/assets',
    express.static(join(options.root, 'assets'), {
      index: false,
      immutable: true,
      maxAge: '365d',
      setHeaders: protect,
    }),
  );
  router.get(['/', '/index.html'], (_req, res) => {
    protect(res);
    res.setHeader('Cache-Control', 'no-cache');
    if (!existsSync(index)) {
      res.status(503).type('text/plain').send(`${options.title} is not built. Run: npm run build:web\n`);
      return;
    }
    res.sendFile(index);
  });
  router.use(
    express.static(options.root, {
      index: false,
      fallthrough: true,
      maxAge: '1h',
      setHeaders: protect,
    }),
  );
  return router;
}

/** The hashes of a page's inline scripts or styles, as a Content Security Policy allows them. */
function inlineHashes(html: string, tag: 'script' | 'style'): string {
  const hashes = [...html.matchAll(new RegExp(`<${tag}\\b[^>]*>([\\s\\S]*?)</${tag}>`, 'gi'))].map(
    (match) =>
      `'sha256-${createHash('sha256')
        .update(match[1] ?? '')
        .digest('base64')}'`,
  );
  return hashes.length > 0 ? hashes.join(' ') : "'none'";
}

/**
 * Serves self-contained pages (MCP App views, each one HTML file with its code inline) at `/views/<name>`, to be
 * framed by this listener's own pages only: each under a policy that allows exactly its inline code (by hash),
 * nothing to load and nowhere to connect.
 */
export function viewPages(pageOf: (page: string) => Promise<string | undefined>): Router {
  const router = express.Router();
  router.get('/views/:page', async (req, res, next) => {
    const html = /^[a-z0-9-]{1,64}\.html$/.test(req.params.page) ? await pageOf(`views/${req.params.page}`) : undefined;
    if (html === undefined) {
      next();
      return;
    }
    res.setHeader(
      'Content-Security-Policy',
      [
        "default-src 'none'",
        `script-src ${inlineHashes(html, 'script')}`,
        `style-src ${inlineHashes(html, 'style')}`,
        'img-src data:',
        'font-src data:',
        "connect-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'self'",
      ].join('; '),
    );
    res.setHeader('X-Frame-Options', 'SAMEORIGIN');
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(html);
  });
  return router;
}
