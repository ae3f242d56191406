import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import { viteSingleFile } from 'vite-plugin-singlefile';

/**
 * The workflow run view, an MCP App: one self-contained HTML file (scripts and styles inlined), which the MCP
 * server hands to hosts as the `ui://agent-service/workflow-run.html` resource. It loads nothing from anywhere.
 */
export default defineConfig({
  root: fileURLToPath(new URL('./', import.meta.url)),
  base: './',
  plugins: [react(), viteSingleFile({ removeViteModuleLoader: true })],
  build: {
    outDir: fileURLToPath(new URL('../../dist/web/run-view', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
  },
});
