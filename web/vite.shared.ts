import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig, type UserConfig } from 'vite';

export interface WebAppOptions {
  /** The app's folder under web/, which is also its folder under dist/web/. */
  name: string;
  /** The variable that points `vite` in development at the service's listener for this app. */
  serviceUrlEnv: string;
  /** The port of that listener on this machine when the variable is unset. */
  defaultPort: number;
  /** Whether the app also opens a WebSocket at /ws, which the dev server must proxy too. */
  webSocket?: boolean;
  /** Paths the service answers besides /api and /auth, which the dev server must proxy too. */
  servicePaths?: readonly string[];
}

/**
 * The Vite configuration every web app shares: the service serves them under a strict Content Security Policy and
 * possibly behind a path prefix, so what the build may emit is the same for all; only the folder and, for `vite` in
 * development, the listener to proxy to differ.
 */
export function webAppConfig({
  name,
  serviceUrlEnv,
  defaultPort,
  webSocket = false,
  servicePaths = [],
}: WebAppOptions): UserConfig {
  const service = process.env[serviceUrlEnv] ?? `http://127.0.0.1:${defaultPort}`;
  return defineConfig({
    root: fileURLToPath(new URL(`./${name}/`, import.meta.url)),
    // Relative asset URLs, so the built app also works behind a path prefix.
    base: './',
    publicDir: 'public',
    plugins: [react()],
    build: {
      outDir: fileURLToPath(new URL(`../dist/web/${name}`, import.meta.url)),
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
        ...Object.fromEntries(servicePaths.map((path) => [path, service])),
        ...(webSocket ? { '/ws': { target: service.replace(/^http/, 'ws'), ws: true } } : {}),
      },
    },
  });
}
