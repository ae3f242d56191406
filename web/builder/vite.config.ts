import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));
const outDir = fileURLToPath(new URL('../../dist/web/builder', import.meta.url));
/** The service's builder listener, for `vite` in development (BUILDER_PORT). */
const service = process.env.BUILDER_URL ?? 'http://127.0.0.1:8002';

export default defineConfig({
  root,
  // Relative asset URLs, so the built app also works behind a path prefix.
  base: './',
  publicDir: 'public',
  plugins: [react()],
  build: {
    outDir,
    emptyOutDir: true,
    // The polyfill is an inline script, which the service's Content Security Policy (script-src 'self') refuses.
    modulePreload: { polyfill: false },
    // Nothing inlined as data: URIs (font-src and others allow only 'self').
    assetsInlineLimit: 0,
    target: 'es2022',
    sourcemap: true,
  },
  server: {
    proxy: {
      '/api': service,
      '/auth': service,
    },
  },
});
