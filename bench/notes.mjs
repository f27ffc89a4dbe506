// Measures the ledger's git access on one generated repository: spawned git (what core ships) against
// isomorphic-git and simple-git, as medians and ratios (DESIGN 6). Run by hand, not a test:
//   node bench/notes.mjs [--notes 10000] [--runs 5] [--iso-write-cap 500]
// The TypeScript source is bundled with esbuild into a temporary module first (there is no per-package build).
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import iso from 'isomorphic-git';
import { simpleGit } from 'simple-git';

const { values: options } = parseArgs({
  options: {
    notes: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '5' },
    'iso-write-cap': { type: 'string', default: '500' },
    'iso-read-cap': { type: 'string', default: '200' },
  },
});
const N = Number(options.notes);
const RUNS = Number(options.runs);
const ISO_WRITE_CAP = Math.min(N, Number(options['iso-write-cap']));
const ISO_READ_CAP = Math.min(N, Number(options['iso-read-cap']));
const APPEND_BATCH = 20;

const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'delegate-git-bench-notes-')));
const dir = path.join(work, 'repo');
// Removed however the run ends (a failed run must not leave a 10,000-file repository behind).
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }));
const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull };
for (const key of Object.keys(env))
  if (key.startsWith('GIT_') && !key.startsWith('GIT_CONFIG')) delete env[key];

function runGit(args, input) {
  const result = spawnSync('git', args, { cwd: dir, env, input, maxBuffer: 1 << 30 });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
  return result.stdout.toString('utf8');
}

function blobId(content) {
  return createHash('sha1')
    .update(`blob ${Buffer.byteLength(content)}\0`)
    .update(content)
    .digest('hex');
}

/** A record-sized line (~600 bytes, the size of a JCS DSSE envelope). */
function fakeRecord(seed) {
  const payload = createHash('sha512').update(String(seed)).digest('base64').repeat(5).slice(0, 440);
  const keyid = createHash('sha256').update('key').digest('hex');
  const sig = createHash('sha512').update(`sig${seed}`).digest('base64');
  return JSON.stringify({
    payload,
    payloadType: 'application/vnd.in-toto+json',
    signatures: [{ keyid, sig }],
  });
}

const fanned = (id) => `${id.slice(0, 2)}/${id.slice(2)}`;

async function time(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

async function median(runs, fn) {
  const times = [];
  for (let i = 0; i < runs; i++) times.push(await time(fn));
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const rows = [];
function row(operation, spawned, other, note = '') {
  rows.push({ operation, spawned, other, note });
  const ratio =
    typeof spawned === 'number' && typeof other === 'number' ? ` (${(other / spawned).toFixed(1)}x)` : '';
  console.error(`  ${operation}: ${fmt(spawned)} vs ${fmt(other)}${ratio} ${note}`);
}
function fmt(value) {
  if (typeof value !== 'number') return value ?? '';
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(1)} ms`;
}

// --- module under test ---------------------------------------------------------------------------------------
const moduleFile = path.join(work, 'core.mjs');
await build({
  stdin: {
    contents:
      "export * from './packages/core/src/git.ts'; export * from './packages/core/src/notes-ledger.ts';",
    resolveDir: repoRoot,
    loader: 'ts',
  },
  outfile: moduleFile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
});
const core = await import(moduleFile);

// --- generate the repository with one fast-import ----------------------------------------------------------
console.error(
  `generating ${N} files with a one-line note each (plus ${APPEND_BATCH * (RUNS + 1)} spare blobs) in ${dir}`,
);
let files = [];
let spareBlobs = [];
const generated = await time(() => {
  execFileSync('git', ['init', '-q', '-b', 'main', dir], { env });
  runGit(['config', 'user.name', 'Bench']);
  runGit(['config', 'user.email', 'bench@example.com']);
  const parts = [];
  files = [];
  for (let i = 0; i < N; i++) {
    const content = `export const value${i} = ${i};\n`;
    files.push({ path: `src/d${i % 100}/file${i}.ts`, content, id: blobId(content) });
  }
  const spares = Array.from({ length: APPEND_BATCH * (RUNS + 1) }, (_, i) => `spare blob ${i}\n`);
  for (const content of spares) parts.push(`blob\ndata ${Buffer.byteLength(content)}\n${content}\n`);
  parts.push('commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 5\nfiles\n');
  for (const { path: file, content } of files)
    parts.push(`M 100644 inline ${file}\ndata ${Buffer.byteLength(content)}\n${content}\n`);
  parts.push(
    '\ncommit refs/notes/delegations\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 5\nnotes\n',
  );
  for (const [i, { id }] of files.entries()) {
    const note = `${fakeRecord(i)}\n`;
    parts.push(`M 100644 inline ${fanned(id)}\ndata ${Buffer.byteLength(note)}\n${note}\n`);
  }
  parts.push('\ndone\n');
  runGit(['fast-import', '--quiet', '--done'], parts.join(''));
  runGit(['reset', '-q', '--hard', 'main']);
  spareBlobs = spares.map(blobId);
});
console.error(`  generated in ${fmt(generated)}`);

const ledger = new core.NotesLedger({ cwd: dir, env });
const gitOpts = { cwd: dir, env };

// --- baseline --------------------------------------------------------------------------------------------
row(
  `git status, ${N} files`,
  await median(RUNS, () => core.git(['status', '--porcelain'], gitOpts)),
  '',
  'baseline',
);
row(
  'node -e 0 (Node start-up)',
  await median(RUNS, () => execFileSync(process.execPath, ['-e', '0'])),
  '',
  'baseline',
);

// --- read every note -------------------------------------------------------------------------------------
console.error('reading all notes');
let readCount = 0;
const spawnedRead = await median(RUNS, async () => {
  readCount = 0;
  for await (const entry of ledger.entries()) readCount += entry.lines.length;
});
if (readCount !== N) throw new Error(`read ${readCount} lines, expected ${N}`);
const isoCache = {};
const isoFullRead = await time(async () => {
  // One shared cache object, so isomorphic-git parses the pack index once (its fastest way to read many objects).
  const cache = {};
  let lines = 0;
  const walkTree = async (oid) => {
    const { tree } = await iso.readTree({ fs, dir, oid, cache });
    for (const entry of tree) {
      if (entry.type === 'tree') await walkTree(entry.oid);
      else {
        const { blob } = await iso.readBlob({ fs, dir, oid: entry.oid, cache });
        lines += Buffer.from(blob).toString('utf8').split('\n').filter(Boolean).length;
      }
    }
  };
  const tip = await iso.resolveRef({ fs, dir, ref: 'refs/notes/delegations' });
  const { commit } = await iso.readCommit({ fs, dir, oid: tip, cache });
  await walkTree(commit.tree);
  if (lines !== N) throw new Error(`isomorphic-git read ${lines} lines, expected ${N}`);
});
row(
  `read ${N} notes: ledger.entries() (ls-tree -r + cat-file --batch) vs isomorphic-git readTree+readBlob`,
  spawnedRead,
  isoFullRead,
  '(isomorphic-git: 1 run)',
);
const spawnedMany = await median(RUNS, () => ledger.linesOnMany(files.map((file) => file.id)));
row(`read ${N} notes by blob id: ledger.linesOnMany()`, spawnedMany, '', '');

// --- write N notes in one notes commit -------------------------------------------------------------------
console.error('writing notes');
const writeRuns = Math.min(RUNS, 3);
let writeRun = 0;
const additions = files.map((file, i) => ({ blob: file.id, lines: [fakeRecord(`w${i}`)] }));
const spawnedWrite = await median(writeRuns, async () => {
  const fresh = new core.NotesLedger({ cwd: dir, env, ref: `refs/notes/bench-write-${writeRun++}` });
  const { added } = await fresh.append(additions);
  if (added !== N) throw new Error(`wrote ${added}`);
});

// The alternative writer: blobs through hash-object, the tree through a temporary index, then commit-tree.
const indexWriter = await time(async () => {
  const blobDir = path.join(work, 'note-blobs');
  fs.mkdirSync(blobDir, { recursive: true });
  const paths = additions.map(({ lines }, i) => {
    const file = path.join(blobDir, String(i));
    fs.writeFileSync(file, `${lines[0]}\n`);
    return file;
  });
  const ids = (
    await core.gitText(['hash-object', '-w', '--no-filters', '--stdin-paths'], {
      ...gitOpts,
      input: `${paths.join('\n')}\n`,
    })
  ).split('\n');
  const indexEnv = { ...env, GIT_INDEX_FILE: path.join(work, 'notes-index') };
  const info = additions.map(({ blob }, i) => `100644 ${ids[i]}\t${fanned(blob)}\n`).join('');
  await core.git(['update-index', '--add', '--index-info'], { cwd: dir, env: indexEnv, input: info });
  const tree = await core.gitText(['write-tree'], { cwd: dir, env: indexEnv });
  const commit = await core.gitText(['commit-tree', tree, '-m', 'notes'], gitOpts);
  await core.git(['update-ref', 'refs/notes/bench-index-writer', commit, ''], gitOpts);
});
row(
  `write ${N} notes in one commit: ledger.append() (fast-import) vs temporary index + write-tree`,
  spawnedWrite,
  indexWriter,
  '(index writer: 1 run)',
);

let isoWrite = 0;
isoWrite = await time(async () => {
  for (const { blob, lines } of additions.slice(0, ISO_WRITE_CAP)) {
    await iso.addNote({
      fs,
      dir,
      ref: 'refs/notes/bench-iso',
      oid: blob,
      note: `${lines[0]}\n`,
      cache: isoCache,
    });
  }
});
row(
  `write ${N} notes: ledger.append() vs isomorphic-git addNote`,
  spawnedWrite,
  (isoWrite / ISO_WRITE_CAP) * N,
  `(addNote: ${ISO_WRITE_CAP} measured, ${fmt(isoWrite / ISO_WRITE_CAP)} each, extrapolated linearly to ${N}; each rewrites the whole tree, so this understates)`,
);

// isomorphic-git's readNote cannot find notes in a tree git fanned out (DESIGN 6): count that on the real ledger,
// and time it on the flat ledger its own addNote wrote.
let readNoteFailures = 0;
for (const file of files.slice(0, ISO_READ_CAP)) {
  try {
    await iso.readNote({ fs, dir, ref: 'refs/notes/delegations', oid: file.id, cache: isoCache });
  } catch {
    readNoteFailures++;
  }
}
const isoReadNote = await time(async () => {
  for (const { blob } of additions.slice(0, ISO_READ_CAP)) {
    await iso.readNote({ fs, dir, ref: 'refs/notes/bench-iso', oid: blob, cache: isoCache });
  }
});
const spawnedOne = await median(RUNS, () => ledger.linesOn(files[0].id));
row(
  'read one note: ledger.linesOn() vs isomorphic-git readNote',
  spawnedOne,
  isoReadNote / ISO_READ_CAP,
  `(readNote: mean of ${ISO_READ_CAP} on its own flat ${ISO_WRITE_CAP}-note tree; on the fanned-out ledger ${readNoteFailures} of ${ISO_READ_CAP} threw)`,
);

// --- append a small batch to the big ledger --------------------------------------------------------------
console.error(`appending ${APPEND_BATCH} notes to the ${N}-note ledger`);
let batchRun = 0;
const spawnedAppend = await median(RUNS, async () => {
  const batch = spareBlobs.slice(batchRun * APPEND_BATCH, ++batchRun * APPEND_BATCH);
  await ledger.append(batch.map((blob, i) => ({ blob, lines: [fakeRecord(`a${batchRun}-${i}`)] })));
});
runGit(['update-ref', 'refs/notes/bench-notes-add', 'refs/notes/delegations']);
const notesAddEach = await time(async () => {
  for (const [i, blob] of spareBlobs.slice(-APPEND_BATCH).entries()) {
    await core.git(['notes', '--ref=bench-notes-add', 'add', '-m', fakeRecord(`n${i}`), blob], gitOpts);
  }
});
row(
  `append ${APPEND_BATCH} notes to the ${N}-note ledger: ledger.append() vs ${APPEND_BATCH}x git notes add`,
  spawnedAppend,
  notesAddEach,
  '(git notes add: on a copy of the ledger, 1 run)',
);

// --- list staged blob ids --------------------------------------------------------------------------------
console.error('listing staged blob ids');
const spawnedStaged = await median(RUNS, async () => {
  const out = await core.git(['ls-files', '-s', '-z'], gitOpts);
  const count = out.toString('utf8').split('\0').filter(Boolean).length;
  if (count !== N) throw new Error(`ls-files listed ${count}`);
});
const isoStaged = await median(Math.min(RUNS, 3), async () => {
  const ids = await iso.walk({
    fs,
    dir,
    trees: [iso.STAGE()],
    map: async (_filepath, [entry]) => (entry && (await entry.type()) === 'blob' ? entry.oid() : undefined),
  });
  if (ids.flat(Infinity).filter(Boolean).length !== N)
    throw new Error('isomorphic-git walk listed a different count');
});
row(
  `list ${N} staged blob ids: git ls-files -s -z vs isomorphic-git walk(STAGE)`,
  spawnedStaged,
  isoStaged,
  '',
);

// --- one command through simple-git ----------------------------------------------------------------------
console.error('one command: spawned git vs simple-git');
const sg = simpleGit({ baseDir: dir });
const commandRuns = Math.max(RUNS, 15);
row(
  'one command that prints a line (rev-parse HEAD): spawned git vs simple-git raw',
  await median(commandRuns, () => core.gitText(['rev-parse', 'HEAD'], gitOpts)),
  await median(commandRuns, () => sg.raw(['rev-parse', 'HEAD'])),
);
row(
  'one command that prints nothing (check-ref-format): spawned git vs simple-git raw',
  await median(commandRuns, () => core.git(['check-ref-format', 'refs/heads/x'], gitOpts)),
  await median(commandRuns, () => sg.raw(['check-ref-format', 'refs/heads/x'])),
);

// --- report ----------------------------------------------------------------------------------------------
console.log(
  `\nnotes bench: ${N} notes, medians of ${RUNS} runs unless noted; git ${runGit(['--version']).trim().replace('git version ', '')}, node ${process.version}, ${os.cpus().length} cpus\n`,
);
console.log('| operation | spawned git | other | ratio | note |');
console.log('|---|---|---|---|---|');
for (const { operation, spawned, other, note } of rows) {
  const ratio =
    typeof spawned === 'number' && typeof other === 'number' ? `${(other / spawned).toFixed(1)}x` : '';
  console.log(`| ${operation} | ${fmt(spawned)} | ${fmt(other)} | ${ratio} | ${note} |`);
}
