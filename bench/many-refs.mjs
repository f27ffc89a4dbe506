// The server gate on a push that updates many refs at once (a mirror push, `git push --all` after a fetch, a
// rewind of every branch): no goal of its own in DESIGN 6, but the whole push must stay inside GitHub Enterprise
// Server's 5 s pre-receive budget, and rt53 measured 54 s for a mirror push rewinding 599 refs.
// Run by hand:
//   node bench/many-refs.mjs [--refs 300] [--runs 3] [--fresh]
//
// The remote holds the pre-receive bench's dataset (10,000 files, a ledger of 10,000 records) and --refs branches,
// each one commit on main changing one governed file (promoted by a record). Three pushes, each measured as the hook
// run directly (objects present, ref lines on stdin, as bench/pre-receive.mjs does) and as `git push --atomic` to a
// remote with the hook and to the same remote without it:
//   forward: every branch gets one more commit changing its file again, and the ledger records the new content;
//   rewind:  every branch is forced back to main (each brings main's version of its file back);
//   new:     as many new branches, one on each pushed commit of `forward`, with that ledger update.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  blobId,
  commitHeader,
  cryptoCalibration,
  dataChunk,
  datasetParams,
  ensureCliBuilt,
  ensureDataset,
  fastImport,
  fileContent,
  filePath,
  fmtInt,
  fmtMs,
  freshCopy,
  gatedServer,
  git,
  loadAverage,
  loadCore,
  log,
  machineLine,
  markdownTable,
  median,
  notesCommits,
  recordLine,
  run,
  sha256,
  signingContext,
  timeSync,
} from './lib.mjs';

const { values: options } = parseArgs({
  options: {
    refs: { type: 'string', default: '300' },
    runs: { type: 'string', default: '3' },
    fresh: { type: 'boolean', default: false },
  },
});
const REFS = Number(options.refs);
const RUNS = Math.max(1, Number(options.runs));

ensureCliBuilt();
const core = await loadCore();
const dataset = await ensureDataset(
  core,
  datasetParams({ files: 10000, versions: 1, recordsPerFile: 1, recordsPerNotesCommit: 10000 }),
  { fresh: options.fresh },
);
const { repo, env } = dataset;
if (REFS > 10000) throw new Error('--refs must not exceed the 10,000 files of the dataset');

const pushDir = path.join(dataset.dir, `many-refs-${REFS}-v2`);
const pushFile = path.join(pushDir, 'push.json');
const base = path.join(pushDir, 'base.git'); // the remote before the push
const staged = path.join(pushDir, 'staged.git'); // the same plus the pushed objects, reachable from no ref
/** The work repository's refs of this --refs (each count its own: fast-import does not move a ref back). */
const NS = `many-${REFS}`;
const branch = (i) => `refs/heads/b${i}`;
const newBranch = (i) => `refs/heads/n${i}`;
const fileOf = (i) => i * Math.floor(10000 / REFS);

/**
 * One commit per branch on `from(i)` changing file i to `version`, under refs/bench/<name>/b<i>, and notes commits
 * (on `notesParent`, as refs/bench/<name>-notes) recording each new content as UNIT_PASSED.
 */
async function branchCommits(ctx, name, from, version, notesParent, seqStart) {
  const notes = new Map();
  let seq = seqStart;
  const time = Math.floor(Date.now() / 1000);
  await fastImport(
    repo,
    env,
    (function* () {
      for (let i = 0; i < REFS; i++) {
        const file = fileOf(i);
        const content = fileContent(file, version);
        const id = blobId(content);
        notes.set(id, [
          recordLine(core, ctx, {
            path: filePath(file),
            blob: id,
            sha256: sha256(content),
            outcome: 'UNIT_PASSED',
            seq: seq++,
          }),
        ]);
        yield* commitHeader(`refs/bench/${name}/b${i}`, `change file ${file}`, time + i, from(i));
        yield `M 100644 inline ${filePath(file)}\n`;
        yield* dataChunk(content);
        yield '\n';
      }
      yield* notesCommits(`refs/bench/${name}-notes`, notesParent, [], notes, 10, time);
      yield 'done\n';
    })(),
  );
  return git(['rev-parse', `refs/bench/${name}-notes`], repo, env);
}

const refTips = (prefix) =>
  Array.from({ length: REFS }, (_, i) => git(['rev-parse', `refs/bench/${prefix}/b${i}`], repo, env));

async function preparePush() {
  fs.rmSync(pushDir, { recursive: true, force: true });
  fs.mkdirSync(pushDir, { recursive: true });
  const started = performance.now();
  const ctx = signingContext(core, dataset);
  const main = git(['rev-parse', 'main'], repo, env);
  const notes0 = git(['rev-parse', 'refs/notes/delegations'], repo, env);
  // A run with --fresh left its branches here: fast-import would not move them back.
  const stale = git(['for-each-ref', '--format=delete %(refname)', `refs/bench/${NS}`], repo, env);
  if (stale !== '') run('git', ['update-ref', '--stdin'], { cwd: repo, env, input: `${stale}\n` });
  const notes1 = await branchCommits(ctx, `${NS}/before`, () => main, 2000, notes0, 2_000_000);
  const before = refTips(`${NS}/before`);
  const notes2 = await branchCommits(ctx, `${NS}/after`, (i) => before[i], 3000, notes1, 3_000_000);
  const after = refTips(`${NS}/after`);

  git(['init', '-q', '--bare', base], pushDir, env);
  git(['symbolic-ref', 'HEAD', 'refs/heads/main'], base, env);
  const refspecs = before.map((_, i) => `refs/bench/${NS}/before/b${i}:${branch(i)}`);
  git(
    ['push', '-q', base, 'main', `refs/bench/${NS}/before-notes:refs/notes/delegations`, ...refspecs],
    repo,
    env,
  );
  fs.cpSync(base, staged, { recursive: true });
  git(
    [
      'push',
      '-q',
      staged,
      `refs/bench/${NS}/after-notes:refs/bench-tmp/notes`,
      ...after.map((_, i) => `refs/bench/${NS}/after/b${i}:refs/bench-tmp/b${i}`),
    ],
    repo,
    env,
  );
  run('git', ['update-ref', '--stdin'], {
    cwd: staged,
    env,
    input: ['refs/bench-tmp/notes', ...after.map((_, i) => `refs/bench-tmp/b${i}`)]
      .map((r) => `delete ${r}\n`)
      .join(''),
  });
  const push = { main, notes1, notes2, before, after, preparedMs: performance.now() - started };
  fs.writeFileSync(pushFile, `${JSON.stringify(push, null, 2)}\n`);
  log(`  prepared the pushes in ${fmtMs(push.preparedMs)}`);
  return push;
}

const push =
  fs.existsSync(pushFile) && !options.fresh
    ? JSON.parse(fs.readFileSync(pushFile, 'utf8'))
    : await preparePush();
const ledger = `${push.notes1} ${push.notes2} refs/notes/delegations\n`;
const ZERO = '0'.repeat(40);
const scenarios = {
  forward: {
    stdin: ledger + push.after.map((id, i) => `${push.before[i]} ${id} ${branch(i)}\n`).join(''),
    refspecs: [
      '--force',
      `refs/bench/${NS}/after-notes:refs/notes/delegations`,
      ...push.after.map((_, i) => `refs/bench/${NS}/after/b${i}:${branch(i)}`),
    ],
  },
  rewind: {
    stdin: push.before.map((id, i) => `${id} ${push.main} ${branch(i)}\n`).join(''),
    refspecs: ['--force', ...push.before.map((_, i) => `main:${branch(i)}`)],
  },
  new: {
    stdin: ledger + push.after.map((id, i) => `${ZERO} ${id} ${newBranch(i)}\n`).join(''),
    refspecs: [
      `refs/bench/${NS}/after-notes:refs/notes/delegations`,
      ...push.after.map((_, i) => `refs/bench/${NS}/after/b${i}:${newBranch(i)}`),
    ],
  },
};

const scratch = path.join(pushDir, 'run');
const stagedServer = gatedServer(scratch, staged, 'staged-server.git', env);
const baseServer = gatedServer(scratch, base, 'base-server.git', env);

function runHook(scenario) {
  const remote = freshCopy(scratch, stagedServer, 'direct.git');
  const { ms, value } = timeSync(() =>
    run(path.join(remote, 'hooks', 'pre-receive'), [], {
      cwd: remote,
      env: { ...env, GIT_DIR: '.' },
      input: scenarios[scenario].stdin,
      allowFailure: true,
    }),
  );
  if (value.status !== 0)
    throw new Error(`pre-receive (${scenario}) exited ${value.status}:\n${value.stderr}`);
  return ms;
}

function timePush(from, scenario) {
  const remote = freshCopy(scratch, from, 'pushed.git');
  const { ms, value } = timeSync(() =>
    run('git', ['push', '-q', '--atomic', remote, ...scenarios[scenario].refspecs], {
      cwd: repo,
      env,
      allowFailure: true,
    }),
  );
  if (value.status !== 0) throw new Error(`git push (${scenario}) exited ${value.status}:\n${value.stderr}`);
  return ms;
}

const loadBefore = loadAverage();
const crypto = await cryptoCalibration();
const samples = Object.fromEntries(
  Object.keys(scenarios).map((s) => [s, { hook: [], with: [], without: [] }]),
);
log(`measuring ${RUNS} rounds of ${Object.keys(scenarios).join(', ')} (${REFS} refs each)`);
for (let r = 0; r < RUNS; r++) {
  for (const [name, s] of Object.entries(samples)) {
    s.hook.push(runHook(name));
    s.with.push(timePush(baseServer, name));
    s.without.push(timePush(base, name));
    log(
      `  round ${r + 1} ${name}: hook ${fmtMs(s.hook.at(-1))}, push ${fmtMs(s.with.at(-1))} with / ${fmtMs(s.without.at(-1))} without`,
    );
  }
}
const loadAfter = loadAverage();
fs.rmSync(scratch, { recursive: true, force: true });

console.log(`\n### many refs (bench/many-refs.mjs): ${machineLine()}\n`);
console.log(
  `Remote: ${fmtInt(10000)} files, a ledger of ${fmtInt(dataset.records)} records, ${fmtInt(REFS)} branches of one ` +
    `promoted commit each. Medians of ${RUNS} runs, each on a fresh copy of the remote. Load average ${loadBefore} ` +
    `before, ${loadAfter} after; node:crypto Ed25519 here: ${fmtInt(crypto.verify)} verify/s.\n`,
);
const describe = {
  forward: `${REFS} branches each one commit on, ${REFS} records in ${Math.ceil(REFS / 10)} notes commits`,
  rewind: `${REFS} branches forced back to main`,
  new: `${REFS} new branches on the pushed commits, with the same records`,
};
console.log(
  markdownTable(
    ['push', 'hook run directly', 'git push with the hook', 'without', 'ratio'],
    Object.entries(samples).map(([name, s]) => {
      const [hook, withHook, without] = [median(s.hook), median(s.with), median(s.without)];
      return [
        describe[name],
        fmtMs(hook),
        fmtMs(withHook),
        fmtMs(without),
        `${(withHook / without).toFixed(1)}x`,
      ];
    }),
  ),
);
