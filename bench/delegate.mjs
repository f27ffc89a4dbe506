// Measures the delegation overhead: everything `delegate-git delegate` does beyond the model and the verification
// command (DESIGN 6 goal: < 100 ms). Run by hand, not a test, after `node scripts/build.mjs`:
//   node bench/delegate.mjs [--runs 20] [--cli <bin/delegate-git.js of a build>] [--against <another build's bin>]
//                           [--worker-ms 0] [--profile]
// The built CLI delegates a one-file unit (`runVerification: "true"`, `verificationRepeats: 1`) to a local
// replaying worker that answers at once; the overhead is the median, over the rounds, of each delegation's wall time
// less that round's measurements of what is not delegate-git's own work (starting Node, the worker's HTTP round
// trip, the `true` command in a shell). --worker-ms makes the worker take that long to answer (each delegation and each
// round trip alike), as a model does: work the CLI does while the model generates is then hidden, as it is in use.
// The test worker (test/support/fake-worker.ts) is bundled with esbuild into a temporary module first. The
// measurements are interleaved round by round (a delegation, `node -e 0`, `sh -c true`, a round trip), so a load
// swing on a shared machine moves them together; --against adds a second build to each round (in alternating
// order), for a before/after under the same load.
// --profile then runs one more delegation with GIT_TRACE2_EVENT (every git process, when it started and how long it
// took) and one under `node --cpu-prof` with an unminified bundle of the same sources (kept in .bench/profiles/).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { profileSummary, readableCli } from './lib.mjs';

const { values: options } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    cli: { type: 'string' },
    against: { type: 'string' },
    profile: { type: 'boolean', default: false },
    'worker-ms': { type: 'string', default: '0' },
  },
});
const RUNS = Number(options.runs);
const GOAL_MS = 100;

const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const cliBin = path.resolve(options.cli ?? path.join(repoRoot, 'packages', 'cli', 'bin', 'delegate-git.js'));
if (!fs.existsSync(path.join(path.dirname(cliBin), '..', 'dist', 'delegate-git.cjs'))) {
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
function timed(command, args, cwd = dir, childEnv = env) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(command, args, { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
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
// The unit's one run: a unit may ask for more runs than the operator's setting, never fewer.
runSync(process.execPath, [cliBin, 'config', 'set', 'verification.repeats', '1']);

const WORKER_MS = Number(options['worker-ms']);
const reply = (i) => ({
  content: `\`\`\`js file="src/bench-${i}.js"\nexport const value = ${i};\n\`\`\`\n`,
  ...(WORKER_MS > 0 ? { delayMs: WORKER_MS } : {}),
});
let unitCounter = 0;
async function delegateOnce({ nodeArgs = [], bin = cliBin, env: childEnv = env } = {}) {
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
  const run = await timed(
    process.execPath,
    [...nodeArgs, bin, 'delegate', unitFile, '--json'],
    dir,
    childEnv,
  );
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

// Each build keeps its V8 code cache in a directory of its own: in a shared one, a build removes the other's cache
// for the same command (as an older build's), and each run would compile everything again.
const builds = [{ label: 'this build', bin: cliBin }];
if (options.against) builds.push({ label: 'against', bin: path.resolve(options.against) });
for (const [i, b] of builds.entries()) {
  const codeCache = path.join(work, `code-cache-${i}`);
  fs.mkdirSync(codeCache, { mode: 0o700 });
  Object.assign(b, { runs: [], env: { ...env, DELEGATE_GIT_CODE_CACHE: codeCache } });
}

// Warm the file system cache, the bundles, the code caches and git once before measuring.
for (const b of builds) await delegateOnce(b);
await workerRoundTrip();

const nodeStart = [];
const shellTrue = [];
const roundTrips = [];
for (let round = 0; round < RUNS; round++) {
  nodeStart.push((await timed(process.execPath, ['-e', '0'])).ms);
  for (const b of round % 2 ? [...builds].reverse() : builds) b.runs.push(await delegateOnce(b));
  shellTrue.push((await timed('/bin/sh', ['-c', 'true'])).ms);
  roundTrips.push(await workerRoundTrip());
}
const profile = options.profile ? await profileOnce() : null;
await worker.close();

const baseline = { node: median(nodeStart), worker: median(roundTrips), command: median(shellTrue) };
const fmt = (ms) => `${ms.toFixed(1).padStart(7)} ms`;

console.log(
  `delegate-git delegate, ${RUNS} runs (medians; ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(2)})`,
);
console.log(`  - node -e 0 (starting Node)            ${fmt(baseline.node)}`);
console.log(
  `  - worker round trip (warm fetch)       ${fmt(baseline.worker)}${WORKER_MS > 0 ? ` (the worker answers after ${WORKER_MS} ms)` : ''}`,
);
console.log(`  - sh -c true (the command)             ${fmt(baseline.command)}`);
for (const b of builds) {
  const total = median(b.runs.map((d) => d.ms));
  // Per round, the delegation less that round's own baselines: a drift in the machine's speed moves them together.
  const overhead = median(
    b.runs.map((d, round) => d.ms - nodeStart[round] - roundTrips[round] - shellTrue[round]),
  );
  console.log(`${b.label}: ${b.bin}`);
  console.log(`  whole command                          ${fmt(total)}`);
  console.log(
    `  = delegation overhead                  ${fmt(overhead)}   goal < ${GOAL_MS} ms: ${overhead < GOAL_MS ? 'met' : 'NOT met'}`,
  );
  // On a shared or noisy machine absolute times swing; the ratio to starting Node moves less.
  console.log(`  whole command / node -e 0              ${(total / baseline.node).toFixed(2).padStart(7)} x`);
  console.log(
    `  as seen inside the CLI: worker ${fmt(median(b.runs.map((d) => d.workerMs)))}, command ${fmt(median(b.runs.map((d) => d.commandMs)))}`,
  );
}
if (profile) {
  console.log(
    `\ngit processes of one delegation (${profile.git.length}; start offset from the first, wall time):`,
  );
  for (const g of profile.git)
    console.log(
      `  +${g.offset.toFixed(1).padStart(6)} ms ${g.ms.toFixed(1).padStart(6)} ms  git ${g.argv.slice(0, 100)}`,
    );
  const { totalMs, top } = profile.cpu;
  console.log(
    `\nCPU profile of one delegation (${totalMs.toFixed(0)} ms sampled, ${profile.cpuWallMs.toFixed(0)} ms wall; ${path.relative(repoRoot, profile.kept)}):`,
  );
  for (const { name, ms } of top) console.log(`  ${ms.toFixed(1).padStart(7)} ms  ${name}`);
}

/** One delegation traced (GIT_TRACE2_EVENT), one under --cpu-prof with an unminified bundle. */
async function profileOnce() {
  const traceFile = path.join(work, 'trace2.json');
  await delegateOnce({ env: { ...env, GIT_TRACE2_EVENT: traceFile, GIT_TRACE2_EVENT_NESTING: '1' } });
  const bySid = new Map();
  for (const line of fs.readFileSync(traceFile, 'utf8').split('\n')) {
    if (!line) continue;
    const event = JSON.parse(line);
    const entry = bySid.get(event.sid) ?? {};
    if (event.event === 'start')
      Object.assign(entry, { argv: event.argv.slice(1).join(' '), start: Date.parse(event.time) });
    if (event.event === 'exit') entry.ms = event.t_abs * 1000;
    bySid.set(event.sid, entry);
  }
  const git = [...bySid.values()].filter((e) => e.argv !== undefined);
  const first = Math.min(...git.map((g) => g.start));
  for (const g of git) g.offset = g.start - first;

  const readable = await readableCli();
  const profDir = path.join(work, 'prof');
  // Once to leave V8's code cache for the readable bundle (as the timed runs have theirs), then the profiled run.
  await delegateOnce({ bin: readable });
  const start = performance.now();
  await delegateOnce({
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
    bin: readable,
  });
  const cpuWallMs = performance.now() - start;
  const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  const kept = path.join(repoRoot, '.bench', 'profiles', 'delegate');
  fs.rmSync(kept, { recursive: true, force: true });
  fs.mkdirSync(kept, { recursive: true });
  fs.copyFileSync(path.join(profDir, file), path.join(kept, file));
  return { git, cpu: profileSummary(path.join(kept, file), 25), cpuWallMs, kept };
}
