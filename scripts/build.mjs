// Bundles the CLI (with core and delegate inlined) into packages/cli/dist, so the published package and the
// server-side hook need nothing but Node. Commands are split into chunks loaded on demand: a hook run pays
// only for the modules it uses.
import { cpSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const outdir = new URL('../packages/cli/dist/', import.meta.url).pathname;
rmSync(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: {
    'delegate-git': new URL('../packages/cli/src/main.ts', import.meta.url).pathname,
    // verify spreads signature checks over worker threads; the worker script must sit next to the chunks.
    'verify-worker': new URL('../packages/core/src/verify-worker.ts', import.meta.url).pathname,
  },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: Boolean(process.env.DELEGATE_GIT_BUILD_META),
  // CommonJS dependencies (picomatch) call require() for Node built-ins.
  banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
});

// One self-contained file for servers (no chunks to keep together); see docs/server.md.
await build({
  entryPoints: [new URL('../packages/cli/src/standalone.ts', import.meta.url).pathname],
  outfile: `${outdir}delegate-git-standalone.mjs`,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  legalComments: 'none',
  logLevel: 'warning',
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
});

// The hook scripts travel inside the package: `init` installs them from here.
cpSync(new URL('../hooks/', import.meta.url).pathname, `${outdir}hooks`, { recursive: true });
if (result.metafile) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(process.env.DELEGATE_GIT_BUILD_META, JSON.stringify(result.metafile));
}
