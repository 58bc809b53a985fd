// Writes ../gateway/dashboard/dist/sources.sha256: a digest of the sources
// the assets were built from. gateway/dashboard's test computes the same
// digest and fails when they differ, i.e. when web/ changed after the last
// `make web`. Keep the two in step (sourcesDigest in dashboard_test.go).
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../', import.meta.url));

export function sourceFiles() {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(join(repo, dir))) {
      const rel = `${dir}/${name}`;
      if (statSync(join(repo, rel)).isDirectory()) walk(rel);
      else if (!/\.test\.tsx?$/.test(name)) out.push(rel);
    }
  };
  for (const f of ['web/index.html', 'web/package.json', 'web/package-lock.json', 'web/tsconfig.json', 'web/vite.config.ts',
    'schemas/plan.json', 'schemas/workflow.request.json']) out.push(f);
  walk('web/src');
  walk('web/public');
  return out.sort();
}

export function sourcesDigest() {
  const h = createHash('sha256');
  for (const f of sourceFiles()) {
    const c = createHash('sha256').update(readFileSync(join(repo, f))).digest('hex');
    h.update(`${f.split(sep).join('/')}\n${c}\n`);
  }
  return h.digest('hex');
}

const target = join(repo, 'gateway/dashboard/dist/sources.sha256');
writeFileSync(target, sourcesDigest() + '\n');
console.log(`wrote ${relative(process.cwd(), target)}`);
