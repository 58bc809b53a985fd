import { defineConfig } from 'vitest/config';
import preact from '@preact/preset-vite';

// The build goes straight into the Go package that embeds it.
export default defineConfig({
  plugins: [preact()],
  build: {
    outDir: '../gateway/dashboard/dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // One small app: no source maps in the binary, no inlined assets
    // (the Content-Security-Policy allows data: images only).
    sourcemap: false,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  server: {
    // npm run dev: the API of a local `agentbus serve`.
    proxy: { '/v1': { target: 'http://127.0.0.1:8080', ws: true } },
    fs: { allow: ['..'] },
  },
  test: {
    include: ['src/**/*.test.ts'],
  },
});
