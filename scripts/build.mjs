// Bundles the CLI (with core and delegate inlined) into packages/cli/dist, so the published package and the
// server-side hook need nothing but Node. The new build is made beside the old one and swapped in, so a command
// already running from dist never finds half a build.
//
// The CLI is one CommonJS file, delegate-git.cjs, which bin/delegate-git.js runs through V8's code cache (see there):
// Node 20 offers a code cache only to scripts, not to ES modules, and compiling is much of a short command's time.
// Commands stay lazily evaluated inside it (esbuild wraps what main.ts imports on demand), so a hook run still
// evaluates only the gate's modules.
//   node scripts/build.mjs [--out <dist dir>]     DELEGATE_GIT_MINIFY=0 for a bundle a profile can name functions in
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const source = (p) => new URL(`../${p}`, import.meta.url).pathname;
const { values: options } = parseArgs({ options: { out: { type: 'string' } } });
const dist = options.out ? path.resolve(options.out) : source('packages/cli/dist');
const next = `${dist}.next-${process.pid}`;
const esmBanner =
  "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";
// The hook scripts go into the bundles (hook-install.ts): the single-file server build has nothing beside it.
const hooks = Object.fromEntries(
  ['pre-commit', 'post-merge', 'pre-push', 'pre-receive'].map((name) => [
    name,
    readFileSync(source(`hooks/${name}`), 'utf8'),
  ]),
);
const common = {
  bundle: true,
  define: { __DELEGATE_GIT_HOOKS__: JSON.stringify(hooks) },
  platform: 'node',
  target: 'node20',
  legalComments: 'none',
  logLevel: 'warning',
  // Measured: a minified bundle starts a hook about 30 ms sooner (less to parse); DELEGATE_GIT_MINIFY=0 for reading.
  minify: process.env.DELEGATE_GIT_MINIFY !== '0',
  metafile: true,
};
// Every file any bundle took in: the packages among them are named, with their licenses, beside the bundles.
const bundled = new Set();
const bundle = async (options) => {
  const result = await build({ ...common, ...options });
  for (const input of Object.keys(result.metafile.inputs)) bundled.add(input);
  return result;
};

try {
  const script = {
    ...common,
    format: 'cjs',
    // import() of a Node built-in becomes require(): the script runs from the bin's vm.Script, where a dynamic
    // import needs a loader callback that Node 20 before 20.12 cannot give.
    supported: { 'dynamic-import': false },
  };
  const result = await bundle({
    ...script,
    entryPoints: [source('packages/cli/src/main.ts')],
    outfile: `${next}/delegate-git.cjs`,
    // The few modules that find their neighbours (the worker script, the hook scripts) do it from import.meta.url.
    define: { ...common.define, 'import.meta.url': '__bundle_url' },
    banner: { js: "var __bundle_url = require('node:url').pathToFileURL(__filename).href;" },
  });
  if (process.env.DELEGATE_GIT_BUILD_META)
    writeFileSync(process.env.DELEGATE_GIT_BUILD_META, JSON.stringify(result.metafile));
  // The pre-commit hook's quick answer, run by the bin before (and most often instead of) the whole CLI.
  await bundle({
    ...script,
    entryPoints: [source('packages/cli/src/pre-commit-quick.ts')],
    outfile: `${next}/pre-commit-quick.cjs`,
  });
  // (A readable bundle keeps its dependencies' comments, some of them not ASCII; it is only for profiles.)
  if (common.minify)
    for (const f of ['delegate-git.cjs', 'pre-commit-quick.cjs']) assertAscii(`${next}/${f}`);

  // verify spreads signature checks over worker threads; the worker script must sit next to the CLI.
  await bundle({
    entryPoints: [source('packages/core/src/verify-worker.ts')],
    outfile: `${next}/verify-worker.js`,
    format: 'esm',
    banner: { js: esmBanner },
  });

  // One self-contained module for servers (nothing beside it to keep together); see docs/server.md.
  await bundle({
    entryPoints: [source('packages/cli/src/standalone.ts')],
    outfile: `${next}/delegate-git-standalone.mjs`,
    format: 'esm',
    banner: { js: `#!/usr/bin/env node\n${esmBanner}` },
  });

  writeFileSync(`${next}/THIRD-PARTY-NOTICES.txt`, thirdPartyNotices(bundled));

  const old = `${dist}.old-${process.pid}`;
  if (existsSync(dist)) renameSync(dist, old);
  renameSync(next, dist);
  rmSync(old, { recursive: true, force: true });
} finally {
  rmSync(next, { recursive: true, force: true });
}

/**
 * One character outside ASCII makes V8 hold the whole bundle as a two-byte string, which every run then reads and
 * scans at twice the size (about 4 ms of each command here). esbuild escapes them in strings, not in regular
 * expression literals: write those with \u escapes.
 */
function assertAscii(file) {
  const text = readFileSync(file, 'latin1');
  const at = text.search(/[^\x00-\x7f]/);
  if (at === -1) return;
  const around = readFileSync(file, 'utf8').slice(Math.max(0, at - 60), at + 20);
  throw new Error(
    `${path.basename(file)} is not ASCII near: ${around}\n(write the character as a \\u escape)`,
  );
}

/**
 * The licenses of the packages inlined into the bundles, which their MIT, ISC and Apache terms ask to travel with
 * the code: each package's name, version, license field and license file, from its own package.json directory.
 */
function thirdPartyNotices(inputs) {
  const roots = new Set();
  for (const input of inputs) {
    // pnpm's layout nests: node_modules/.pnpm/zod@4.6.7/node_modules/zod/index.js; the last package named is the one.
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/@.][^/]*)\//.exec(input.replaceAll('\\', '/'));
    if (m) roots.add(m[1]);
  }
  const sections = [...roots]
    .map((root) => {
      const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
      // Some ship several (LICENSE.BSD beside LICENSE.LIBCXX): all of them.
      const files = readdirSync(root).filter((f) => /^licen[cs]e(\.[a-z]+)?$/i.test(f));
      const text =
        files.map((f) => readFileSync(path.join(root, f), 'utf8').trim()).join('\n\n') ||
        '(the package ships no license file)';
      return `${manifest.name} ${manifest.version} (${manifest.license ?? 'no license field'})\n\n${text}\n`;
    })
    .sort();
  if (sections.length === 0) throw new Error('no third-party package found in the bundles');
  return [
    'delegate-git bundles the following packages into its dist/ files. Their licenses follow.\n',
    ...sections,
  ].join(`\n${'-'.repeat(78)}\n\n`);
}
