// Shared helpers of the measuring scripts (bench/gate.mjs, bench/pre-receive.mjs, bench/verify.mjs): the built CLI,
// a bundled core for signing, a clean git environment, timing and tables, and the generated datasets.
//
// A dataset is a git repository with `files` files under src/ (each with `versions` versions in its history), the
// policy written by the real `delegate-git init --protect 'src/**'`, and a ledger of files x recordsPerFile records
// signed for real with the repository's key. It is cached under .bench/ (gitignored) and reused while its
// parameters match; `--fresh` on any script regenerates it.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const benchDir = path.join(repoRoot, '.bench');
/** A copy of packages/cli/{bin,dist} (see ensureCliBuilt). */
export const cliPath = path.join(benchDir, 'cli', 'bin', 'delegate-git.js');
/**
 * The copies carry the package's package.json as installed: without its `"type": "module"`, Node first tries the
 * bin as CommonJS, fails, and only then loads it as ESM (about 20 ms more on every run).
 */
/** A copy of the CLI's package.json, and its node_modules linked: the optional sodium-native resolves as installed. */
function copyPackageFiles(root) {
  fs.copyFileSync(path.join(repoRoot, 'packages', 'cli', 'package.json'), path.join(root, 'package.json'));
  fs.symlinkSync(path.join(repoRoot, 'packages', 'cli', 'node_modules'), path.join(root, 'node_modules'));
}

/** The same sources bundled without minifying, for profiles that name functions (see readableCli). */
const readableCliPath = path.join(benchDir, 'cli-readable', 'bin', 'delegate-git.js');
/** Bumped whenever the generated layout changes, so an old cache is not reused by mistake. */
const GENERATOR_VERSION = 3;
export const KEY_NAME = 'bench';
const AUTHOR = 'Bench <bench@example.com>';
/** Records are dated from here on (one second apart): fixed, so a regenerated ledger has the same shape. */
const RECORD_EPOCH = Date.UTC(2026, 5, 1);

export const log = (text) => process.stderr.write(`${text}\n`);

// --- environment --------------------------------------------------------------------------------------------

/** The environment every git and delegate-git process of the benches runs in: no user or system git config. */
export function benchEnv(extra = {}) {
  fs.mkdirSync(benchDir, { recursive: true });
  const gitconfig = path.join(benchDir, 'gitconfig');
  fs.writeFileSync(
    gitconfig,
    '[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n',
  );
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('GIT_')) delete env[key];
  return {
    ...env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: gitconfig,
    DELEGATE_GIT_SIGNING_KEY: '',
    ...extra,
  };
}

/** Runs a command to completion; throws with its stderr when it fails. */
export function run(cmd, args, opts = {}) {
  const result = spawnSync(cmd, args, { maxBuffer: 1 << 30, ...opts });
  if (result.error) throw result.error;
  if (result.status !== 0 && !opts.allowFailure) {
    throw new Error(`${cmd} ${args.join(' ')} exited ${result.status}: ${result.stderr}${result.stdout}`);
  }
  return result;
}

export function git(args, cwd, env, opts = {}) {
  return run('git', args, { cwd, env, ...opts })
    .stdout.toString('utf8')
    .trim();
}

export function cli(args, cwd, env, opts = {}) {
  return run(process.execPath, [cliPath, ...args], { cwd, env, ...opts });
}

// --- the built CLI and a bundled core -------------------------------------------------------------------

function newestMtime(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile())
      newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/**
 * The CLI the benches run: packages/cli/bin/delegate-git.js with the bundle scripts/build.mjs makes, built when
 * missing or older than any source it bundles, then copied with its bin into .bench/cli/ (same layout, same
 * bytes), so a rebuild started by someone else while a bench runs cannot pull the bundle from under it.
 */
export function ensureCliBuilt() {
  const dist = path.join(repoRoot, 'packages', 'cli', 'dist');
  const bundle = path.join(dist, 'delegate-git.cjs');
  const sources = ['core', 'delegate', 'cli'].map((p) => path.join(repoRoot, 'packages', p, 'src'));
  const stale = !fs.existsSync(bundle) || fs.statSync(bundle).mtimeMs < Math.max(...sources.map(newestMtime));
  if (stale) {
    log('building the CLI (node scripts/build.mjs): packages/cli/dist is missing or older than the sources');
    run(process.execPath, [path.join(repoRoot, 'scripts', 'build.mjs')], { cwd: repoRoot, stdio: 'inherit' });
  }
  const copy = path.join(benchDir, 'cli');
  for (let attempt = 1; ; attempt++) {
    try {
      fs.rmSync(copy, { recursive: true, force: true });
      fs.cpSync(dist, path.join(copy, 'dist'), { recursive: true });
      fs.cpSync(path.join(repoRoot, 'packages', 'cli', 'bin'), path.join(copy, 'bin'), { recursive: true });
      copyPackageFiles(copy);
      run(process.execPath, [cliPath, '--version']);
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
      log(
        `copying packages/cli/dist failed (a rebuild in progress?), retrying: ${error.message.split('\n')[0]}`,
      );
      spawnSync('sleep', ['2']);
    }
  }
}

/**
 * The CLI bundled as scripts/build.mjs does but not minified (its DELEGATE_GIT_MINIFY=0), into .bench/cli-readable/,
 * so a CPU profile names functions. Only profiles run it; every timed figure comes from the real build.
 */
export async function readableCli() {
  const root = path.join(benchDir, 'cli-readable');
  fs.rmSync(root, { recursive: true, force: true });
  run(process.execPath, [path.join(repoRoot, 'scripts', 'build.mjs'), '--out', path.join(root, 'dist')], {
    cwd: repoRoot,
    env: { ...process.env, DELEGATE_GIT_MINIFY: '0' },
  });
  fs.cpSync(path.join(repoRoot, 'packages', 'cli', 'bin'), path.join(root, 'bin'), { recursive: true });
  copyPackageFiles(root);
  return readableCliPath;
}

/** core's index bundled with esbuild into .bench/ (there is no per-package build), then imported. */
export async function loadCore() {
  const { build } = await import('esbuild');
  const outfile = path.join(benchDir, `core-${process.pid}.mjs`);
  fs.mkdirSync(benchDir, { recursive: true });
  await build({
    entryPoints: [path.join(repoRoot, 'packages', 'core', 'src', 'index.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  });
  try {
    return await import(outfile);
  } finally {
    fs.rmSync(outfile, { force: true });
  }
}

// --- timing and reporting -------------------------------------------------------------------------------

/** Wall time of a synchronous function, in ms. */
export function timeSync(fn) {
  const start = performance.now();
  const value = fn();
  return { ms: performance.now() - start, value };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function fmtMs(ms) {
  if (typeof ms !== 'number' || Number.isNaN(ms)) return String(ms ?? '');
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`;
}

export function fmtInt(n) {
  return n.toLocaleString('en-US');
}

export function markdownTable(headers, rows) {
  return [
    `| ${headers.join(' | ')} |`,
    `|${headers.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

export function machineLine() {
  const cpu = os.cpus()[0]?.model ?? 'unknown cpu';
  const gitVersion = spawnSync('git', ['--version']).stdout.toString().trim().replace('git version ', '');
  const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot })
    .stdout.toString()
    .trim();
  const dirty =
    spawnSync('git', ['status', '--porcelain', '--', 'packages'], { cwd: repoRoot }).stdout.length > 0;
  return `${new Date().toISOString().slice(0, 10)}, code at ${commit}${dirty ? ' (+ uncommitted changes in packages/)' : ''}, ${os.cpus().length} cores (${cpu}), ${Math.round(os.totalmem() / 2 ** 30)} GB, Node ${process.version}, git ${gitVersion}, ${os.platform()} ${os.release()}`;
}

/**
 * Drops a file (or every file below a directory) from the page cache: `dd iflag=nocache count=0` asks the kernel
 * (posix_fadvise DONTNEED) to forget its clean pages, which works without privileges, unlike drop_caches.
 */
export function evictFromPageCache(target) {
  if (!fs.existsSync(target)) return 0;
  const files = fs.statSync(target).isDirectory()
    ? fs
        .readdirSync(target, { withFileTypes: true, recursive: true })
        .filter((e) => e.isFile())
        .map((e) => path.join(e.parentPath, e.name))
    : [target];
  for (const file of files) spawnSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  return files.length;
}

/** Reads every file below `target` once, so a measurement that follows finds them in the page cache. */
export function warmPageCache(target) {
  if (!fs.existsSync(target)) return;
  for (const entry of fs.readdirSync(target, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) fs.readFileSync(path.join(entry.parentPath, entry.name));
  }
}

/**
 * Every git process a run started (GIT_TRACE2_EVENT), with its argv and wall time, for "where the time goes".
 * `runWith(env)` runs the measured command with the tracing environment.
 */
export function traceGit(env, runWith) {
  const file = path.join(os.tmpdir(), `delegate-git-bench-trace2-${process.pid}-${Date.now()}.json`);
  try {
    runWith({ ...env, GIT_TRACE2_EVENT: file, GIT_TRACE2_EVENT_NESTING: '1' });
    const bySid = new Map();
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      if (!line) continue;
      const event = JSON.parse(line);
      const entry = bySid.get(event.sid) ?? {};
      if (event.event === 'start')
        Object.assign(entry, { argv: event.argv.slice(1).join(' '), start: event.time });
      if (event.event === 'exit') entry.ms = event.t_abs * 1000;
      bySid.set(event.sid, entry);
    }
    return [...bySid.values()].filter((e) => e.argv !== undefined && !e.argv.startsWith('--version'));
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/** Functions whose inclusive CPU time the profile summary reports (the phases of the gates and of verify). */
const PHASES = [
  'checkStaged',
  'loadGovernance',
  'stagedChanges',
  'loadPathIndex',
  'buildPathIndex',
  'addLines',
  'judgeFiles',
  'judgeLines',
  'linesOnMany',
  'listNotes',
  'judgePush',
  'judgeLedgerUpdate',
  'lineProblem',
  'addedLines',
  'judgeRefUpdate',
  'newChanges',
  'verifyLedger',
  'verifyLines',
  'checkRevision',
  'checkAppendOnly',
  'droppedLines',
  'decodeRecord',
  'verifyRecord',
  'checkLedgerLine',
  'verifyOneShot',
];

/**
 * A `node --cpu-prof` profile summed up: self time per function (largest first), and inclusive CPU time of the
 * PHASES (time in samples whose stack holds the function; after an await a stack starts at the resumed function,
 * so this is the CPU a phase spent itself, not its wall time).
 */
export function profileSummary(file, top = 15) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const self = new Map();
  const inclusive = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const delta = (profile.timeDeltas[i] ?? 0) / 1000;
    total += delta;
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    const where = url ? `${path.basename(url)}:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + delta);
    const seen = new Set();
    for (let node = id; node !== undefined; node = parent.get(node)) {
      const name = byId.get(node).callFrame.functionName;
      if (PHASES.includes(name) && !seen.has(name)) {
        seen.add(name);
        inclusive.set(name, (inclusive.get(name) ?? 0) + delta);
      }
    }
  });
  return {
    totalMs: total,
    top: [...self.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms })),
    phases: PHASES.filter((name) => inclusive.has(name)).map((name) => ({ name, ms: inclusive.get(name) })),
  };
}

function printSummary(title, { totalMs, top, phases }) {
  log(`  ${title}: ${fmtMs(totalMs)} sampled`);
  if (phases.length) {
    log('    inclusive CPU time of the phases:');
    for (const { name, ms } of phases) log(`    ${fmtMs(ms).padStart(8)}  ${name}`);
  }
  log('    self time, top functions:');
  for (const { name, ms } of top) log(`    ${fmtMs(ms).padStart(8)}  ${name}`);
}

/**
 * Runs the CLI (the unminified build of readableCli) once under `--cpu-prof` and prints what its threads spent
 * their time on (what to look at for a MISS): the main thread, and worker threads (if any) summed together.
 * Profiles are kept in .bench/profiles/.
 */
export async function profileCli(label, args, cwd, env, input) {
  const readable = await readableCli();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'delegate-git-bench-prof-'));
  try {
    const { ms } = timeSync(() =>
      run(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, readable, ...args], {
        cwd,
        env,
        input,
        allowFailure: true,
      }),
    );
    // Node names each thread's profile CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; thread 0 is main.
    const files = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .sort();
    if (files.length === 0) return;
    const keep = path.join(benchDir, 'profiles', label);
    fs.rmSync(keep, { recursive: true, force: true });
    fs.mkdirSync(keep, { recursive: true });
    const threadOf = (f) => Number(f.split('.').at(-3));
    log(
      `\nprofile of ${label}: ${fmtMs(ms)} wall, ${files.length} thread(s) (${path.relative(repoRoot, keep)}/)`,
    );
    for (const f of files) fs.copyFileSync(path.join(dir, f), path.join(keep, f));
    const main = files.find((f) => threadOf(f) === 0) ?? files[0];
    printSummary('main thread', profileSummary(path.join(keep, main)));
    const workers = files.filter((f) => f !== main).map((f) => profileSummary(path.join(keep, f), 1000));
    if (workers.length) {
      const sum = (list) => {
        const totals = new Map();
        for (const { name, ms: t } of list) totals.set(name, (totals.get(name) ?? 0) + t);
        return [...totals].map(([name, t]) => ({ name, ms: t })).sort((a, b) => b.ms - a.ms);
      };
      printSummary(`${workers.length} worker thread(s), summed`, {
        totalMs: workers.reduce((n, w) => n + w.totalMs, 0),
        top: sum(workers.flatMap((w) => w.top)).slice(0, 15),
        phases: sum(workers.flatMap((w) => w.phases)),
      });
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Prints every git process a CLI run started, with its wall time (GIT_TRACE2). */
export function traceCli(label, args, cwd, env, input) {
  const traced = traceGit(env, (tracedEnv) =>
    run(process.execPath, [cliPath, ...args], { cwd, env: tracedEnv, input, allowFailure: true }),
  );
  log(`\ngit processes of ${label}: ${traced.length} (wall time each; they overlap)`);
  for (const t of traced) log(`  ${fmtMs(t.ms ?? Number.NaN).padStart(8)}  git ${t.argv.slice(0, 110)}`);
}

/** A fresh copy of the repository `from` at `<dir>/<name>` (a server the hook writes its cache into, say). */
export function freshCopy(dir, from, name) {
  const target = path.join(dir, name);
  fs.rmSync(target, { recursive: true, force: true });
  fs.cpSync(from, target, { recursive: true });
  return target;
}

/**
 * A copy of the bare repository `from` set up as this build of the CLI sets up a server (`init --server`), holding the
 * gate's cache for its current ledger tip as a server that has taken pushes before does (`check --rev` fills it).
 * Made per script run, not cached with a dataset: another build's hook script or cache might not be this one's.
 */
export function gatedServer(dir, from, name, env) {
  const remote = freshCopy(dir, from, name);
  cli(['init', '--server'], remote, env);
  cli(['check', '--rev', 'main'], remote, env);
  return remote;
}

/** The 1-minute load average, to show when other work shared the machine during a measurement. */
export function loadAverage() {
  return os.loadavg()[0].toFixed(2);
}

/**
 * node:crypto's Ed25519 sign and verify rates on this machine right now (DESIGN 6's reference figures were
 * 28k/s and 9.9k/s), so figures from different days and machines can be compared.
 */
export async function cryptoCalibration() {
  const { generateKeyPairSync, sign, verify } = await import('node:crypto');
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const message = Buffer.alloc(1700, 42);
  const signature = sign(null, message, privateKey);
  const rate = (fn) => {
    const count = 3000;
    const start = performance.now();
    for (let i = 0; i < count; i++) fn();
    return Math.round(count / ((performance.now() - start) / 1000));
  };
  rate(() => verify(null, message, publicKey, signature));
  return {
    verify: rate(() => verify(null, message, publicKey, signature)),
    sign: rate(() => sign(null, message, privateKey)),
    libsodiumVerify: libsodiumRate(rate, message, publicKey, signature),
  };
}

/** libsodium's verify rate (what `verify`'s threads use when sodium-native loads beside the CLI), or null without it. */
function libsodiumRate(rate, message, publicKey, signature) {
  if (process.env.DELEGATE_GIT_LIBSODIUM === '0') return null;
  let sodium;
  try {
    sodium = createRequire(path.join(benchDir, 'cli', 'dist', 'verify-worker.js'))('sodium-native');
  } catch {
    return null;
  }
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url');
  rate(() => sodium.crypto_sign_verify_detached(signature, message, raw));
  return rate(() => sodium.crypto_sign_verify_detached(signature, message, raw));
}

// --- content and records --------------------------------------------------------------------------------

export function filePath(i) {
  return `src/d${i % 100}/file${i}.ts`;
}

/** About 900 bytes of plausible TypeScript, unique per (file, version). */
export function fileContent(i, version) {
  const lines = [`// ${filePath(i)}, version ${version} (generated by bench/lib.mjs)`];
  lines.push(`export const value${i} = ${version};`, '');
  lines.push(`export function compute${i}(input: number): number {`);
  for (let k = 0; k < 12; k++)
    lines.push(`  const step${k} = input * ${k + 1} + value${i} - ${(i * 31 + k * 7 + version) % 997};`);
  lines.push(`  return ${Array.from({ length: 12 }, (_, k) => `step${k}`).join(' + ')};`, '}', '');
  return Buffer.from(lines.join('\n'), 'utf8');
}

export function blobId(content) {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

export function sha256(content) {
  return createHash('sha256').update(content).digest('hex');
}

const hex = (text) => createHash('sha256').update(text).digest('hex');

/** The mix of historic records: mostly verdicts (UNIT_PASSED among them), some reviews. */
const HISTORIC_OUTCOMES = [
  'UNIT_FAILED',
  'UNIT_PASSED',
  'UNIT_FLAKY',
  'review:approve',
  'UNIT_FAILED',
  'INCOHERENT',
  'UNIT_PASSED',
  'CONTRACT_MODIFIED',
  'review:reject',
  'UNIT_UNVERIFIED',
];
/** Extra records on a file's current content never refuse it: approvals and passes only. */
const CURRENT_OUTCOMES = ['UNIT_PASSED', 'review:approve'];

/**
 * One signed note line, shaped like what `delegate` and `attest` write (the predicate fields of
 * packages/delegate/src/verdict-predicate.ts verdictPredicate), about 1.7 KB.
 */
export function recordLine(core, ctx, { path: file, blob, sha256: digest, outcome, seq }) {
  const createdAt = core.rfc3339(new Date(RECORD_EPOCH + seq * 1000));
  const subject = [{ path: file, sha256: digest, gitBlob: blob }];
  let statement;
  if (outcome.startsWith('review:')) {
    statement = core.reviewStatement(subject, {
      decision: outcome.slice('review:'.length),
      reviewer: { name: KEY_NAME, email: 'bench@example.com' },
      comment: `reviewed ${file} (bench record ${seq})`,
      repository: { id: ctx.repositoryId },
      createdAt,
    });
  } else {
    const passed = outcome === 'UNIT_PASSED';
    const runs = Array.from({ length: 3 }, (_, r) => ({
      exitCode: passed ? 0 : 1,
      passed: passed ? 12 : 11,
      failed: passed ? 0 : 1,
      durationMs: 800 + ((seq + r) % 400),
      timedOut: false,
    }));
    statement = core.verdictStatement(subject, {
      verdict: outcome,
      unit: {
        name: `unit-${seq}`,
        instructionSha256: hex(`instruction ${seq}`),
        targetFiles: [file],
        contextFiles: [{ path: file, lineRange: [1, 40], sha256: hex(`context ${seq}`) }],
        contractFiles: [{ path: 'test/contract.test.ts', sha256: hex('contract') }],
        runVerification: 'node --test',
        repeats: 3,
      },
      verification: {
        runs,
        flaky: outcome === 'UNIT_FLAKY',
        skipped: null,
        failures: passed ? [] : [{ test: `compute ${seq}`, location: `${file}:4:3`, code: 'ERR_ASSERTION' }],
      },
      coherence: null,
      contract:
        outcome === 'CONTRACT_MODIFIED'
          ? { violations: ['test/contract.test.ts was modified while the unit ran'] }
          : { unchanged: true },
      files: [{ path: file, mode: 'patched', hunks: 1, lines: 3, bytes: 120 }],
      worker: {
        endpointHost: '127.0.0.1:1234',
        model: 'qwen2.5-coder-7b-instruct',
        promptTokens: 1800,
        completionTokens: 240,
        durationMs: 4200,
      },
      repository: { id: ctx.repositoryId, baseCommit: ctx.baseCommit },
      createdAt,
      tool: { name: 'delegate-git', version: '0.1.0' },
    });
  }
  return core.signStatement(statement, ctx.key).line;
}

/** Which outcome each of a file's record slots gets, and on which version: slot 0 is a pass on the current one. */
export function recordPlan(versions, recordsPerFile) {
  const current = versions - 1;
  const slots = [];
  for (let k = 0; k < recordsPerFile; k++) {
    if (k === 0) slots.push({ version: current, outcome: 'UNIT_PASSED' });
    else if (versions === 1)
      slots.push({ version: current, outcome: CURRENT_OUTCOMES[k % CURRENT_OUTCOMES.length] });
    else
      slots.push({
        version: (k - 1) % (versions - 1),
        outcome: HISTORIC_OUTCOMES[(k - 1) % HISTORIC_OUTCOMES.length],
      });
  }
  return slots;
}

// --- fast-import ----------------------------------------------------------------------------------------

/** Streams chunks (strings or Buffers, from a sync iterable) into `git fast-import`, honouring back-pressure. */
export function fastImport(cwd, env, chunks, args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['fast-import', '--quiet', '--done', ...args], {
      cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`git fast-import exited ${code}: ${stderr}`)),
    );
    const iterator = chunks[Symbol.iterator]();
    const pump = () => {
      for (;;) {
        const { value, done } = iterator.next();
        if (done) return child.stdin.end();
        if (!child.stdin.write(value)) return child.stdin.once('drain', pump);
      }
    };
    pump();
  });
}

export function* dataChunk(content) {
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  yield `data ${bytes.length}\n`;
  yield bytes;
  yield '\n';
}

export function* commitHeader(ref, message, time, from) {
  yield `commit ${ref}\ncommitter ${AUTHOR} ${time} +0000\n`;
  yield* dataChunk(message);
  if (from) yield `from ${from}\n`;
}

export const fannedPath = (id) => `${id.slice(0, 2)}/${id.slice(2)}`;

/**
 * Notes commits on `ref` adding `notes` (Map blob → lines) in batches of `perCommit` note lines, laid out as
 * NotesLedger writes a big batch (one 2-hex-digit fanout level). Notes already on the parent are moved into the
 * fanout; a blob's lines all go into one commit, so every note is complete when it first appears.
 */
export function* notesCommits(ref, parent, existingFlat, notes, perCommit, time) {
  let lineCount = 0;
  let commitIndex = 0;
  let open = false;
  const openCommit = function* () {
    yield* commitHeader(
      ref,
      `bench: add records (batch ${++commitIndex})`,
      time + commitIndex,
      commitIndex === 1 ? parent : null,
    );
    if (commitIndex === 1) {
      for (const { path: notePath, oid, annotated } of existingFlat) {
        if (notePath === fannedPath(annotated)) continue;
        yield `D ${notePath}\nM 100644 ${oid} ${fannedPath(annotated)}\n`;
      }
    }
    open = true;
  };
  for (const [blob, lines] of notes) {
    if (!open) yield* openCommit();
    yield `M 100644 inline ${fannedPath(blob)}\n`;
    yield* dataChunk(`${[...new Set(lines)].sort().join('\n')}\n`);
    lineCount += lines.length;
    if (lineCount >= perCommit) {
      yield '\n';
      open = false;
      lineCount = 0;
    }
  }
  if (open) yield '\n';
  return commitIndex;
}

// --- datasets -------------------------------------------------------------------------------------------

export function datasetName({ files, versions, recordsPerFile, recordsPerNotesCommit }) {
  return `ds-f${files}-v${versions}-r${recordsPerFile}-c${recordsPerNotesCommit}-g${GENERATOR_VERSION}`;
}

/** Parameters shared by every dataset script option (`--files`, `--versions`, ...). */
export function datasetParams({
  files = 10000,
  versions = 5,
  recordsPerFile = 10,
  recordsPerNotesCommit = 10000,
} = {}) {
  return {
    files: Number(files),
    versions: Number(versions),
    recordsPerFile: Number(recordsPerFile),
    recordsPerNotesCommit: Number(recordsPerNotesCommit),
  };
}

/**
 * The dataset for these parameters, generated unless a complete one is cached under .bench/. Returns its work
 * repository, the environment to run git and delegate-git in (XDG_CONFIG_HOME holding the repository's key), and
 * what it holds.
 */
export async function ensureDataset(core, params, { fresh = false } = {}) {
  const dir = path.join(benchDir, datasetName(params));
  const readyFile = path.join(dir, 'ready.json');
  const env = benchEnv({ XDG_CONFIG_HOME: path.join(dir, 'config') });
  const repo = path.join(dir, 'repo');
  if (!fresh && fs.existsSync(readyFile)) {
    const ready = JSON.parse(fs.readFileSync(readyFile, 'utf8'));
    if (JSON.stringify(ready.params) === JSON.stringify(params)) {
      log(
        `reusing the dataset ${path.relative(repoRoot, dir)} (generated in ${fmtMs(ready.generatedMs)}; --fresh to regenerate)`,
      );
      return { ...ready, dir, repo, env, reused: true };
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const { files, versions, recordsPerFile, recordsPerNotesCommit } = params;
  log(
    `generating ${path.relative(repoRoot, dir)}: ${fmtInt(files)} files x ${versions} versions, ` +
      `${fmtInt(files * recordsPerFile)} records in notes commits of ${fmtInt(recordsPerNotesCommit)}`,
  );
  const phases = [];
  const phase = async (name, fn) => {
    const start = performance.now();
    const value = await fn();
    phases.push([name, performance.now() - start]);
    log(`  ${name}: ${fmtMs(performance.now() - start)}`);
    return value;
  };
  const started = performance.now();

  // 1. The repository and its policy, by the real CLI (the hook is installed, as a user's `init` would).
  await phase('git init + delegate-git init', () => {
    git(['init', '-q', repo], dir, env);
    fs.writeFileSync(path.join(repo, 'README.md'), '# bench repository\n');
    cli(['init', '--protect', 'src/**', '--key', KEY_NAME], repo, env);
  });
  const policy = JSON.parse(fs.readFileSync(path.join(repo, '.delegate-git', 'policy.json'), 'utf8'));
  const anchorFiles = [
    '.delegate-git/policy.json',
    ...fs.readdirSync(path.join(repo, policy.keysDir)).map((f) => `${policy.keysDir}/${f}`),
    'README.md',
  ];

  // 2. The history: one commit adopting delegate-git with every file's first version, then one commit per version.
  const blobs = Array.from({ length: files }, () => []);
  await phase(`content history (${versions} commits x ${fmtInt(files)} files, fast-import)`, () =>
    fastImport(
      repo,
      env,
      (function* () {
        const time = Math.floor(RECORD_EPOCH / 1000) - versions * 86400;
        for (let v = 0; v < versions; v++) {
          yield* commitHeader(
            'refs/heads/main',
            v === 0 ? 'Adopt delegate-git, first versions' : `version ${v}`,
            time + v * 86400,
          );
          if (v === 0) {
            for (const f of anchorFiles) {
              yield `M 100644 inline ${f}\n`;
              yield* dataChunk(fs.readFileSync(path.join(repo, f)));
            }
          }
          for (let i = 0; i < files; i++) {
            const content = fileContent(i, v);
            blobs[i].push({ id: blobId(content), sha256: sha256(content) });
            yield `M 100644 inline ${filePath(i)}\n`;
            yield* dataChunk(content);
          }
          yield '\n';
        }
        yield 'done\n';
      })(),
    ),
  );
  await phase('check out the work tree', () => git(['reset', '-q', '--hard', 'main'], repo, env));
  const baseCommit = git(['rev-parse', 'main'], repo, env);

  // 3. The ledger: every record signed with the key init generated, written as notes commits by fast-import.
  const key = core.loadSigningKey(KEY_NAME, env).key;
  const ctx = { key, repositoryId: policy.repositoryId, baseCommit };
  const plan = recordPlan(versions, recordsPerFile);
  const notes = new Map();
  const byOutcome = {};
  await phase(`sign ${fmtInt(files * recordsPerFile)} records`, () => {
    let seq = 0;
    for (let i = 0; i < files; i++) {
      for (const { version, outcome } of plan) {
        const { id, sha256: digest } = blobs[i][version];
        const line = recordLine(core, ctx, {
          path: filePath(i),
          blob: id,
          sha256: digest,
          outcome,
          seq: seq++,
        });
        const list = notes.get(id);
        if (list) list.push(line);
        else notes.set(id, [line]);
        byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
      }
    }
  });
  const existingFlat = git(['ls-tree', '-r', 'refs/notes/delegations'], repo, env)
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [meta, notePath] = line.split('\t');
      return { path: notePath, oid: meta.split(' ')[2], annotated: notePath.replaceAll('/', '') };
    });
  const notesCommitCount = Math.ceil((files * recordsPerFile) / recordsPerNotesCommit);
  await phase(`write ${fmtInt(notes.size)} notes in ${notesCommitCount} notes commit(s) (fast-import)`, () =>
    fastImport(
      repo,
      env,
      (function* () {
        yield* notesCommits(
          'refs/notes/delegations',
          git(['rev-parse', 'refs/notes/delegations'], repo, env),
          existingFlat,
          notes,
          recordsPerNotesCommit,
          Math.floor(RECORD_EPOCH / 1000),
        );
        yield 'done\n';
      })(),
    ),
  );
  notes.clear();
  await phase('pack (git gc)', () => git(['gc', '-q', '--prune=now'], repo, env));
  const ledgerNotes = git(['ls-tree', '-r', '--name-only', 'refs/notes/delegations'], repo, env).split(
    '\n',
  ).length;
  const generatedMs = performance.now() - started;
  const ready = {
    params,
    generatedMs,
    phases,
    records: files * recordsPerFile,
    notes: ledgerNotes,
    notesCommits: Number(git(['rev-list', '--count', 'refs/notes/delegations'], repo, env)),
    byOutcome,
    repositoryId: policy.repositoryId,
    ledgerTip: git(['rev-parse', 'refs/notes/delegations'], repo, env),
    head: baseCommit,
  };
  fs.writeFileSync(readyFile, `${JSON.stringify(ready, null, 2)}\n`);
  log(`  generated in ${fmtMs(generatedMs)}`);
  return { ...ready, dir, repo, env, reused: false };
}

/** The signing context of a dataset (its key, repository id), for records made after generation. */
export function signingContext(core, dataset) {
  return {
    key: core.loadSigningKey(KEY_NAME, dataset.env).key,
    repositoryId: dataset.repositoryId,
    baseCommit: dataset.head,
  };
}
