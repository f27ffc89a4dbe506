// Bundles the CLI (with core and delegate inlined) into packages/cli/dist, so the published package and the
// server-side hook need nothing but Node. Commands are split into chunks loaded on demand: a hook run pays
// only for the modules it uses. The new build is made beside the old one and swapped in, so a command already
// running from dist never finds half a build.
import { cpSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const source = (p) => new URL(`../${p}`, import.meta.url).pathname;
const dist = source('packages/cli/dist');
const next = `${dist}.next-${process.pid}`;
const banner = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";
const common = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  legalComments: 'none',
  logLevel: 'warning',
  // Measured: a minified bundle starts a hook about 30 ms sooner (less to parse); DELEGATE_GIT_MINIFY=0 for reading.
  minify: process.env.DELEGATE_GIT_MINIFY !== '0',
};

try {
  const result = await build({
    ...common,
    entryPoints: {
      'delegate-git': source('packages/cli/src/main.ts'),
      // verify spreads signature checks over worker threads; the worker script must sit next to the chunks.
      'verify-worker': source('packages/core/src/verify-worker.ts'),
    },
    outdir: next,
    splitting: true,
    metafile: Boolean(process.env.DELEGATE_GIT_BUILD_META),
    // CommonJS dependencies (picomatch) call require() for Node built-ins.
    banner: { js: banner },
  });
  if (result.metafile) writeFileSync(process.env.DELEGATE_GIT_BUILD_META, JSON.stringify(result.metafile));

  // One self-contained file for servers (no chunks to keep together); see docs/server.md.
  await build({
    ...common,
    entryPoints: [source('packages/cli/src/standalone.ts')],
    outfile: `${next}/delegate-git-standalone.mjs`,
    banner: { js: `#!/usr/bin/env node\n${banner}` },
  });

  // The hook scripts travel inside the package: `init` installs them from here.
  cpSync(source('hooks'), `${next}/hooks`, { recursive: true });

  const old = `${dist}.old-${process.pid}`;
  if (existsSync(dist)) renameSync(dist, old);
  renameSync(next, dist);
  rmSync(old, { recursive: true, force: true });
} finally {
  rmSync(next, { recursive: true, force: true });
}
