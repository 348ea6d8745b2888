// Builds the account dashboard (plain TypeScript + DOM) into dist/web, served by the quotes
// service under /dashboard/. Everything is bundled: no CDN at run time.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/dashboard/',
  logLevel: 'warn',
  build: {
    outDir: process.env.DASHBOARD_BUILD_OUT ?? fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
  },
});
