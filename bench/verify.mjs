// `delegate-git verify` (the CI gate) against its goal (DESIGN 6): 100,000 records in < 8 s on 2 cores, linear,
// memory flat. Run by hand:
//   node bench/verify.mjs [--sizes 10000,50000,100000] [--runs 3] [--warm-runs 3] [--budget 60] [--skip-history]
//                         [--skip-memory] [--fresh] [--profile]
// Each size is a generated repository with a tenth as many files under src/ (10 records per file over 5 versions,
// as the other benches), so the whole job grows with the size: every ledger line verified, every governed file at
// HEAD judged, the append-only check over the ledger's history. Wall time by this script's clock; peak RSS and CPU
// time by /usr/bin/time -v (CPU / wall shows how much of the 2 cores the job used). Every cold run starts without
// .git/delegate-git/cache, as a CI job on a fresh checkout does, but with the repository in the page cache. Each size gets up to --runs runs
// but stops after the first run that ends beyond --budget seconds spent on it. Then each size is verified warm
// (--warm-runs times): with the cache the previous run left, as on a developer's machine or a CI runner that keeps
// .git/delegate-git/cache between jobs (DESIGN 6: records already verified under the same trust root).
// Unless --skip-history: one more ledger of 10,000 records written as 1,000 notes commits (one per delegation, as
// `delegate` writes them), verified across its whole history and with --baseline at its tip, because the
// append-only check costs per notes commit, not per record. Unless --skip-memory: flat memory, as a ledger ten times
// as large on the same files verified within the same capped heap.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  cliPath,
  cryptoCalibration,
  datasetParams,
  ensureCliBuilt,
  ensureDataset,
  fmtInt,
  fmtMs,
  loadAverage,
  loadCore,
  log,
  machineLine,
  markdownTable,
  median,
  profileCli,
  run,
  timeSync,
  warmPageCache,
} from './lib.mjs';

const { values: options } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,50000,100000' },
    runs: { type: 'string', default: '3' },
    'warm-runs': { type: 'string', default: '3' },
    budget: { type: 'string', default: '60' },
    'skip-history': { type: 'boolean', default: false },
    'skip-memory': { type: 'boolean', default: false },
    fresh: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
  },
});
const SIZES = options.sizes.split(',').map(Number);
const RUNS = Number(options.runs);
const WARM_RUNS = Number(options['warm-runs']);
const RECORDS_PER_FILE = 10;
/** --max-old-space-size for the flat-memory runs: about what 10,000 records on 1,000 files need. */
const HEAP_CAP_MB = 16;
const BUDGET_MS = Number(options.budget) * 1000;
const TIME = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : null;
if (!TIME) log('/usr/bin/time is missing: peak RSS and CPU time are not reported');

ensureCliBuilt();
const core = await loadCore();

/**
 * One `delegate-git verify` run: wall ms, peak RSS (MB), CPU s, and the record count it reports. Cold unless `warm`:
 * as on a CI runner's fresh checkout, no cache of an earlier run in .git/delegate-git.
 */
function verifyOnce(dataset, extraArgs = [], warm = false, nodeArgs = []) {
  const args = [...nodeArgs, cliPath, 'verify', ...extraArgs];
  if (!warm)
    fs.rmSync(path.join(dataset.repo, '.git', 'delegate-git', 'cache'), { recursive: true, force: true });
  const { ms, value } = timeSync(() =>
    TIME
      ? run(TIME, ['-v', process.execPath, ...args], {
          cwd: dataset.repo,
          env: dataset.env,
          allowFailure: true,
        })
      : run(process.execPath, args, { cwd: dataset.repo, env: dataset.env, allowFailure: true }),
  );
  const stdout = value.stdout.toString();
  const stderr = value.stderr.toString();
  if (value.status !== 0)
    throw new Error(`verify exited ${value.status} in ${dataset.repo}:\n${stdout}${stderr}`);
  const field = (name) => Number(new RegExp(`${name}: ([0-9.]+)`).exec(stderr)?.[1] ?? Number.NaN);
  // "ledger <tip>: N record line(s) on …" or, since records about several files count once, "… in N line(s) on …".
  const records = Number(/(\d+) (?:record )?line\(s\) on/.exec(stdout)?.[1] ?? Number.NaN);
  if (Number.isNaN(records)) throw new Error(`verify printed no line count:\n${stdout}`);
  return {
    ms,
    rssMb: field('Maximum resident set size \\(kbytes\\)') / 1024,
    cpuS: field('User time \\(seconds\\)') + field('System time \\(seconds\\)'),
    records,
  };
}

/**
 * Up to `runs` runs, fewer (at least one) once the size has used its time budget: while verify takes far longer
 * than its goal, more runs of it say nothing new, and the whole script should stay within minutes.
 */
function measure(dataset, extraArgs, runs, warm = false) {
  // The repository and the CLI in the page cache first, as on a CI runner that has just fetched them.
  warmPageCache(path.join(dataset.repo, '.git'));
  warmPageCache(path.dirname(path.dirname(cliPath)));
  // A warm run starts from the cache a previous run left (one untimed run makes sure there is one).
  if (warm) verifyOnce(dataset, extraArgs, true);
  const results = [];
  let spent = 0;
  while (results.length < runs && (results.length === 0 || spent < BUDGET_MS)) {
    const result = verifyOnce(dataset, extraArgs, warm);
    results.push(result);
    spent += result.ms;
    log(`  run ${results.length}: ${fmtMs(result.ms)}, ${result.rssMb.toFixed(0)} MB`);
  }
  const pick = (k) => median(results.map((r) => r[k]));
  return {
    ms: pick('ms'),
    min: Math.min(...results.map((r) => r.ms)),
    max: Math.max(...results.map((r) => r.ms)),
    runs: results.length,
    rssMb: Math.max(...results.map((r) => r.rssMb)),
    cpuS: pick('cpuS'),
    records: results[0].records,
  };
}

const loadBefore = loadAverage();
const crypto = await cryptoCalibration();
const rows = [];
for (const size of SIZES) {
  const dataset = await ensureDataset(
    core,
    datasetParams({
      files: size / RECORDS_PER_FILE,
      versions: 5,
      recordsPerFile: RECORDS_PER_FILE,
      recordsPerNotesCommit: 10000,
    }),
    { fresh: options.fresh },
  );
  log(`verify over ${fmtInt(size)} records (${fmtInt(dataset.params.files)} files), ${RUNS} runs`);
  const cold = measure(dataset, [], RUNS);
  log(`  warm (the cache of the previous run kept), ${WARM_RUNS} runs`);
  const warm = WARM_RUNS > 0 ? measure(dataset, [], WARM_RUNS, true) : null;
  rows.push({ size, dataset, ...cold, warm });
}

// Flat memory: the ledger grows tenfold on the same 1,000 files (10, then 100 records per file), and verify runs with
// every thread's heap capped. Shown by what verify needs rather than by its RSS: V8 grows its heaps with the
// allocation rate, so RSS rises with a job's length even when nothing more is kept. (What verify keeps per governed
// file of the revision it needs; the rows above grow the files with the records.)
const growth = [];
if (!options['skip-memory']) {
  for (const recordsPerFile of [10, 100]) {
    const dataset = await ensureDataset(
      core,
      datasetParams({ files: 1000, versions: 5, recordsPerFile, recordsPerNotesCommit: 10000 }),
      { fresh: options.fresh },
    );
    log(
      `verify over ${fmtInt(dataset.records)} records on 1,000 files, V8's heap capped at ${HEAP_CAP_MB} MB`,
    );
    try {
      const r = verifyOnce(dataset, [], false, [`--max-old-space-size=${HEAP_CAP_MB}`]);
      growth.push({ records: r.records, ok: true, ms: r.ms });
    } catch (error) {
      const why = String(error.message)
        .split('\n')
        .find((l) => /heap|memory/i.test(l));
      growth.push({ records: dataset.records, ok: false, why: why ?? 'it failed' });
    }
  }
}

let history = null;
if (!options['skip-history']) {
  const dataset = await ensureDataset(
    core,
    datasetParams({ files: 1000, versions: 5, recordsPerFile: RECORDS_PER_FILE, recordsPerNotesCommit: 10 }),
    { fresh: options.fresh },
  );
  log(`verify over ${fmtInt(dataset.records)} records in ${fmtInt(dataset.notesCommits)} notes commits`);
  const whole = measure(dataset, [], 1);
  const baseline = measure(dataset, ['--baseline', dataset.ledgerTip], 1);
  history = { dataset, whole, baseline };
}
const loadAfter = loadAverage();

const largest = rows.at(-1);
const smallest = rows[0];
const perRecord = (r) => (r.ms / r.records) * 1000;
console.log(`\n### verify (bench/verify.mjs): ${machineLine()}\n`);
console.log(
  `Each repository: records / 10 files under src/, 5 versions each, 10 records per file (3 UNIT_PASSED, 2 UNIT_FAILED, ` +
    `1 each of UNIT_FLAKY, INCOHERENT, CONTRACT_MODIFIED, approve, reject), in notes commits of 10,000 records. ` +
    `Medians of up to ${RUNS} runs (within ${options.budget} s per size), the repository and the CLI read into the page cache first. Load average ${loadBefore} before, ${loadAfter} after; node:crypto ` +
    `Ed25519 here: ${fmtInt(crypto.verify)} verify/s; the checking threads use ${crypto.libsodiumVerify === null ? 'node:crypto alone (sodium-native off or not beside the CLI)' : `libsodium first (sodium-native), ${fmtInt(crypto.libsodiumVerify)} verify/s here`}.\n`,
);
console.log(
  markdownTable(
    [
      'record lines (files)',
      'wall (median; min–max, runs)',
      'records/s',
      'ms per 1,000 records',
      'CPU time (cores used)',
      'peak RSS',
      'goal',
      'result',
    ],
    rows.map((r) => [
      `${fmtInt(r.records)} (${fmtInt(r.dataset.params.files)})`,
      `${fmtMs(r.ms)} (${r.runs > 1 ? `${fmtMs(r.min)}–${fmtMs(r.max)}, ` : ''}n=${r.runs})`,
      fmtInt(Math.round(r.records / (r.ms / 1000))),
      perRecord(r).toFixed(0),
      Number.isNaN(r.cpuS) ? '' : `${r.cpuS.toFixed(1)} s (${(r.cpuS / (r.ms / 1000)).toFixed(2)})`,
      Number.isNaN(r.rssMb) ? '' : `${r.rssMb.toFixed(0)} MB`,
      r === largest && r.size >= 100000 ? '< 8 s' : '',
      r === largest && r.size >= 100000 ? (r.ms < 8000 ? 'PASS' : '**MISS**') : '',
    ]),
  ),
);
const warmRows = rows.filter((r) => r.warm);
if (warmRows.length > 0) {
  console.log(
    '\nWarm: the same job with .git/delegate-git/cache as the previous run left it (same ledger, same trust root).\n',
  );
  console.log(
    markdownTable(
      [
        'record lines (files)',
        'wall (median; min–max, runs)',
        'CPU time (cores used)',
        'peak RSS',
        'against cold',
      ],
      warmRows.map(({ warm: w, ...r }) => [
        `${fmtInt(r.records)} (${fmtInt(r.dataset.params.files)})`,
        `${fmtMs(w.ms)} (${w.runs > 1 ? `${fmtMs(w.min)}–${fmtMs(w.max)}, ` : ''}n=${w.runs})`,
        Number.isNaN(w.cpuS) ? '' : `${w.cpuS.toFixed(1)} s (${(w.cpuS / (w.ms / 1000)).toFixed(2)})`,
        Number.isNaN(w.rssMb) ? '' : `${w.rssMb.toFixed(0)} MB`,
        `${((w.ms / r.ms) * 100).toFixed(0)}%`,
      ]),
    ),
  );
}
if (rows.length > 1) {
  console.log(
    `\nLinearity: ${perRecord(largest).toFixed(0)} ms per 1,000 records at ${fmtInt(largest.records)} against ` +
      `${perRecord(smallest).toFixed(0)} at ${fmtInt(smallest.records)} (${(perRecord(largest) / perRecord(smallest)).toFixed(2)}x; ` +
      `1.00x is linear). Peak RSS ${smallest.rssMb.toFixed(0)} MB → ${largest.rssMb.toFixed(0)} MB.`,
  );
}
if (growth.length > 0) {
  console.log(
    `\nMemory: with V8's heap capped at ${HEAP_CAP_MB} MB (\`node --max-old-space-size=${HEAP_CAP_MB}\`, every thread), ` +
      growth
        .map((g) =>
          g.ok
            ? `${fmtInt(g.records)} records on 1,000 files verify in ${fmtMs(g.ms)}`
            : `${fmtInt(g.records)} records on 1,000 files do not (${g.why})`,
        )
        .join('; ') +
      `. ${growth.every((g) => g.ok) ? 'PASS: what verify keeps does not grow with the ledger.' : '**MISS**'}`,
  );
}
if (history) {
  const { dataset, whole, baseline } = history;
  console.log('');
  console.log(
    markdownTable(
      ['ledger history', 'verify (whole history)', 'verify --baseline <tip>', 'difference per notes commit'],
      [
        [
          `${fmtInt(whole.records)} records in ${fmtInt(dataset.notesCommits)} notes commits`,
          fmtMs(whole.ms),
          fmtMs(baseline.ms),
          `${((whole.ms - baseline.ms) / dataset.notesCommits).toFixed(1)} ms`,
        ],
      ],
    ),
  );
}

if (options.profile) {
  fs.rmSync(path.join(largest.dataset.repo, '.git', 'delegate-git', 'cache'), {
    recursive: true,
    force: true,
  });
  await profileCli('verify', ['verify'], largest.dataset.repo, largest.dataset.env);
}
