// Measures the delegation overhead: everything `delegate-git delegate` does beyond the model and the verification
// command (DESIGN 6 goal: < 100 ms). Run by hand, not a test, after `node scripts/build.mjs`:
//   node bench/delegate.mjs [--runs 20] [--cli <path to another build's bin/delegate-git.js>]
// The built CLI delegates a one-file unit (`runVerification: "true"`, `verificationRepeats: 1`) to a local
// replaying worker that answers at once; the median wall time minus the medians of what is not delegate-git's own
// work (starting Node, the worker's HTTP round trip, the `true` command in a shell) is the overhead.
// The test worker (test/support/fake-worker.ts) is bundled with esbuild into a temporary module first.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const { values: options } = parseArgs({
  options: { runs: { type: 'string', default: '20' }, cli: { type: 'string' } },
});
const RUNS = Number(options.runs);
const GOAL_MS = 100;

const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const cliBin = path.resolve(options.cli ?? path.join(repoRoot, 'packages', 'cli', 'bin', 'delegate-git.js'));
if (!fs.existsSync(path.join(path.dirname(cliBin), '..', 'dist', 'delegate-git.js'))) {
  console.error('The CLI is not built: run `node scripts/build.mjs` first.');
  process.exit(2);
}

const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'delegate-git-bench-delegate-')));
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }));
const dir = path.join(work, 'repo');
const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull };
for (const key of Object.keys(env)) {
  if ((key.startsWith('GIT_') && !key.startsWith('GIT_CONFIG')) || key.startsWith('DELEGATE_GIT_'))
    delete env[key];
}
env.XDG_CONFIG_HOME = path.join(work, 'config');
env.USER = 'bench';

// --- the worker ------------------------------------------------------------------------------------------------
const workerModule = path.join(work, 'fake-worker.mjs');
await build({
  entryPoints: [path.join(repoRoot, 'test', 'support', 'fake-worker.ts')],
  outfile: workerModule,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  banner: {
    js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  },
});
const { startFakeWorker } = await import(pathToFileURL(workerModule).href);
const worker = await startFakeWorker();

// --- the repository, set up as a user would --------------------------------------------------------------------
function runSync(command, args, cwd = dir) {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** Runs a child asynchronously (the worker answers from this process) and resolves with its wall time. */
function timed(command, args, cwd = dir) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ ms: performance.now() - start, code, stdout, stderr }));
  });
}

fs.mkdirSync(dir);
runSync('git', ['init', '-q', '-b', 'main', dir], work);
runSync('git', ['config', 'user.name', 'Bench']);
runSync('git', ['config', 'user.email', 'bench@example.com']);
runSync(process.execPath, [cliBin, 'init', '--no-hook', '--protect', 'src/**']);
runSync('git', ['add', '-A']);
runSync('git', ['commit', '-q', '-m', 'adopt delegate-git']);
runSync(process.execPath, [cliBin, 'config', 'set', 'worker.endpoint', worker.url]);
runSync(process.execPath, [cliBin, 'config', 'set', 'verification.approval', 'allow']);

const reply = (i) => ({ content: `\`\`\`js file="src/bench-${i}.js"\nexport const value = ${i};\n\`\`\`\n` });
let unitCounter = 0;
async function delegateOnce() {
  const i = unitCounter++;
  const unitFile = path.join(work, `unit-${i}.json`);
  fs.writeFileSync(
    unitFile,
    JSON.stringify({
      taskName: `bench ${i}`,
      instruction: `Create src/bench-${i}.js.`,
      targetFiles: [`src/bench-${i}.js`],
      runVerification: 'true',
      verificationRepeats: 1,
    }),
  );
  worker.enqueue(reply(i));
  const run = await timed(process.execPath, [cliBin, 'delegate', unitFile, '--json']);
  if (run.code !== 0) throw new Error(`delegate exited ${run.code}: ${run.stderr}${run.stdout}`);
  const receipt = JSON.parse(run.stdout);
  if (receipt.verdict !== 'UNIT_PASSED') throw new Error(`unexpected verdict ${receipt.verdict}`);
  return {
    ms: run.ms,
    workerMs: receipt.worker.durationMs,
    commandMs: receipt.verification.runs[0].durationMs,
  };
}

/** One chat completion as the CLI asks for it (streamed), from a warm client: the round trip alone. */
async function workerRoundTrip() {
  worker.enqueue(reply(unitCounter++));
  const start = performance.now();
  const response = await fetch(`${worker.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true }),
  });
  await response.text();
  return performance.now() - start;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function sample(fn) {
  const values = [];
  for (let i = 0; i < RUNS; i++) values.push(await fn());
  return values;
}

// Warm the file system cache, the bundle and git once before measuring.
await delegateOnce();
await workerRoundTrip();

const delegations = await sample(delegateOnce);
const nodeStart = await sample(async () => (await timed(process.execPath, ['-e', '0'])).ms);
const shellTrue = await sample(async () => (await timed('/bin/sh', ['-c', 'true'])).ms);
const roundTrips = await sample(workerRoundTrip);
await worker.close();

const total = median(delegations.map((d) => d.ms));
const baseline = { node: median(nodeStart), worker: median(roundTrips), command: median(shellTrue) };
const overhead = total - baseline.node - baseline.worker - baseline.command;
const fmt = (ms) => `${ms.toFixed(1).padStart(7)} ms`;

console.log(
  `delegate-git delegate, ${RUNS} runs (medians; ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(2)})`,
);
console.log(`  whole command                          ${fmt(total)}`);
console.log(`  - node -e 0 (starting Node)            ${fmt(baseline.node)}`);
console.log(`  - worker round trip (warm fetch)       ${fmt(baseline.worker)}`);
console.log(`  - sh -c true (the command)             ${fmt(baseline.command)}`);
console.log(
  `  = delegation overhead                  ${fmt(overhead)}   goal < ${GOAL_MS} ms: ${overhead < GOAL_MS ? 'met' : 'NOT met'}`,
);
// On a shared or noisy machine absolute times swing; the ratio to starting Node moves less.
console.log(`  whole command / node -e 0              ${(total / baseline.node).toFixed(2).padStart(7)} x`);
console.log(
  `  as seen inside the CLI: worker ${fmt(median(delegations.map((d) => d.workerMs)))}, command ${fmt(median(delegations.map((d) => d.commandMs)))}`,
);
