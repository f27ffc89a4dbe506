/**
 * The pre-commit hook's first question, answered with as little as possible: may this commit pass without the
 * full check? Most commits stage nothing governed, and the hook runs on every one (DESIGN 6: its own time should
 * stay within one `git status`). Whenever the answer is not certain from what the caches already hold, the caller
 * runs the full check.
 *
 * First without git: the index file is read (index-file.ts) and its governed entries hashed; when HEAD's tree is
 * known (quiet-trees.ts) to have the same governed entries, nothing governed is staged. Each run also learns the
 * tree this index will commit, so the next commit finds its HEAD known. Otherwise two git processes run at once
 * (the paths the index changes against HEAD, and a few object names), and nothing heavier than the glob matcher is
 * loaded. The staged blobs are read from the index file already read, not from git: naming 10,000 changes with
 * their modes and blob ids is 1.2 MB for git to write and the hook to parse, the paths alone a fifth of it.
 *
 * What it relies on, each written by the full check: the staged policy as last validated (kept under the policy
 * blob's id, so an edited policy is validated again), the set of paths the ledger has recorded (per notes commit,
 * path-index.ts), and the decisions per (path, blob) at the ledger tip (decision-store.ts): a commit whose every
 * governed file the full check already found promoted, under the same governance (and the same tip of origin's
 * default branch, whose revocations bind it) and ledger tip, passes here too.
 */
import { isUtf8 } from 'node:buffer';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathsName, recordedPathsBody, replaceCacheFile } from './cache-file.js';
import {
  type GovernanceObjects,
  governanceDigestOf,
  type PromotedTest,
  promotedFile,
  readPromotions,
} from './decision-store.js';
import { namesCanCollide } from './fold-collisions.js';
import { splitZ } from './git-fields.js';
import { type GitDirs, gitDirsOf, looseCommitTree, readText, refTarget } from './git-files.js';
import {
  adoptGlobExpressions,
  changesGovernance,
  DEFAULT_KEYS_DIR,
  foldedPath,
  globExpressions,
  governedMatcher,
  POLICY_PATH,
  recordedAsCheckedOut,
} from './governed-paths.js';
import { type GitIndex, parseGitIndex } from './index-file.js';
import { indexTree } from './index-trees.js';
import { mayBeUndecoded } from './path-text.js';
import type { Policy } from './policy.js';
import { QuietTrees } from './quiet-trees.js';
import { shadowsOf } from './ref-shadows.js';
import { addsName, removedPaths, type StagedChange } from './staged-changes.js';

// notes-ledger.ts's LEDGER_REF, spelled here: this module is the hook's quick bundle, which must not load the ledger.
const LEDGER_REF = 'refs/notes/delegations';
// The CLI's trackingRef('origin') (ledger-intake.ts), spelled here for the same reason: where a pull fetches origin's.
const FETCHED_LEDGER_REF = 'refs/notes/remotes/origin/delegations';
// checks.ts's DEFAULT_BRANCH_REF, spelled here for the same reason: whose revocations bind every branch.
const DEFAULT_BRANCH_REF = 'refs/remotes/origin/HEAD';
/** The names git reads the ledger's and the default branch's as where they do not exist: each must be missing. */
const SHADOWS = [...shadowsOf(LEDGER_REF), ...shadowsOf(DEFAULT_BRANCH_REF)]
  .map((name) => `${name}\n`)
  .join('');

/** `passes`: the full check would let this commit through without a word (nothing governed, or all promoted). */
export interface QuickAnswer {
  passes: boolean;
}

/** Says `passes` only when that is certain; otherwise the full check must answer. */
export async function quickPreCommit(cwd: string, env: NodeJS.ProcessEnv): Promise<QuickAnswer> {
  // A path Node decoded with U+FFFD may name another repository's files: the full check tells, and refuses.
  if (mayBeUndecoded(cwd, env)) return UNSURE;
  const dirs = gitDirsOf(cwd, env);
  const read = dirs === null ? null : readIndex(dirs);
  try {
    const answer = read?.passes ? PASSES : await askGit(cwd, env, dirs, read);
    return answer.passes && dirs !== null && concludesMergeBesideFetchedLedger(dirs) ? UNSURE : answer;
  } finally {
    read?.trees.save(); // what this run learned, whatever the answer
  }
}

/**
 * A merge that stopped on conflicts and is concluded by `git commit` runs no post-merge hook, so this commit's hook
 * takes in the ledger its pull fetched into origin's tracking ref, which the full path
 * does when that ledger is not this one (and asks git whether it brings anything): without it, the ledger pushed
 * beside the merge is refused as not a fast-forward. git writes MERGE_HEAD only for a merge that stopped.
 */
function concludesMergeBesideFetchedLedger(dirs: GitDirs): boolean {
  if (!existsSync(path.join(dirs.gitDir, 'MERGE_HEAD'))) return false;
  const fetched = refTarget(dirs, FETCHED_LEDGER_REF);
  return fetched !== null && fetched !== refTarget(dirs, LEDGER_REF);
}

/** The quick answer from git: the paths the index changes, and what the caches say about them. */
async function askGit(
  cwd: string,
  env: NodeJS.ProcessEnv,
  dirs: GitDirs | null,
  read: IndexRead | null,
): Promise<QuickAnswer> {
  // The keys directory is asked for before the policy says where it is: almost every policy keeps the default.
  // And the names git reads the ledger's as where it does not exist (a tag refs/tags/refs/notes/delegations).
  const names = `HEAD\n:${POLICY_PATH}\n${LEDGER_REF}\nHEAD:${DEFAULT_KEYS_DIR}\nHEAD^{tree}\n${DEFAULT_BRANCH_REF}\n${SHADOWS}`;
  // The diff first: it takes longest, and the first spawn of a process also loads node:child_process.
  const [diff, ids, commonDir] = await Promise.all([
    run(CHANGED_PATHS, cwd, env),
    run(['cat-file', '--batch-check'], cwd, env, names),
    dirs?.commonDir ?? commonDirFromGit(cwd, env),
  ]);
  const [head, policyId, ledger, defaultKeys, headTree, defaultBranch, ...shadows] = (
    ids?.toString('utf8') ?? ''
  ).split('\n');
  if (diff === null || !head?.includes(' commit ')) return UNSURE;
  const base = head.split(' ')[0]!;
  // The blobs come from the index as read before git ran: only if git diffed that same index.
  const index = read && read.head === base && isUnchanged(read) ? read.index : null;
  const changes = changesIn(splitZ(diff), index);
  const isStaged = (c: QuickChange) => (hex: string) => c.at >= 0 && index!.hasOid(c.at, hex);
  if (commonDir === null || !policyId?.includes(' blob ')) return UNSURE;
  const cacheDir = cacheDirOf(commonDir);
  const policyBlob = policyId.split(' ')[0]!;
  const policy = validatedPolicy(cacheDir, policyBlob);
  // Even a commit that stages nothing is refused (exit 2) by the full check when the policy does not validate.
  if (!policy) return UNSURE;

  const tip = ledger?.includes(' commit ') ? ledger.split(' ')[0]! : null;
  if (tip === null && !ledger?.endsWith(' missing')) return UNSURE;
  // git says "missing" too of a ledger ref it cannot read (a file a crash cut short), which the full check refuses:
  // read as no ledger, a path governed only by its records would pass (rt46 f01).
  if (tip === null && existsSync(path.join(commonDir, LEDGER_REF))) return UNSURE;
  if (shadows.some((line) => line !== '' && !line.endsWith(' missing'))) return UNSURE;
  const isGoverned = governedTest(policy, tip, cacheDir);
  if (namesCanCollide(policy) && makesFoldTwin(changes, policy, isGoverned, read?.index ?? null))
    return UNSURE;
  // The full check reports every governed path a deletion removes.
  if (removedPaths(changes).some((r) => isGoverned(r.path, r.link) !== false)) return UNSURE;

  const keysAt = async () =>
    policy.keysDir === DEFAULT_KEYS_DIR
      ? (defaultKeys ?? '')
      : ((await run(['cat-file', '--batch-check'], cwd, env, `${base}:${policy.keysDir}\n`))?.toString() ??
        '');
  // As the full check reads it (checks.ts, defaultBranchRules): the commit it names, or none (undefined: unsure).
  const defaultTip = defaultBranch?.includes(' commit ')
    ? defaultBranch.split(' ')[0]!
    : defaultBranch?.endsWith(' missing')
      ? null
      : undefined;
  const promotions = async () =>
    defaultTip === undefined
      ? null
      : promotionsFor(changes, policy, { policyBlob, defaultTip }, tip, cacheDir, keysAt);
  // Many changes are mostly promoted files: looking each up costs less than matching it against the policy first.
  const promoted = changes.length > FEW_CHANGES ? await promotions() : null;
  const governed: QuickChange[] = [];
  for (const change of changes) {
    if (promoted?.(change.path, isStaged(change))) continue;
    // A symbolic link or submodule is governed also by what it could bring beneath its path (governed-paths.ts).
    const g = isGoverned(change.path, change.submodule === true || change.symlink === true);
    if (g === null) return UNSURE;
    if (g) governed.push(change);
  }
  if (governed.length === 0) {
    if (read?.governed && isSameState(read, { head: base, policyBlob, tip }))
      learnHeadFromDiff(read, headTree, changes, countsIn(policy, isGoverned));
    return PASSES;
  }
  if (promoted !== null) return UNSURE; // each of these was looked up and is not promoted
  const decided = await promotions();
  return decided !== null && governed.every((c) => decided(c.path, isStaged(c))) ? PASSES : UNSURE;
}

/**
 * `diff-index --name-status` of the index against HEAD: the quick path's diff, as the full check's
 * (staged-changes.ts) without renames and copies (a rename is its deletion and its addition here, judged alike).
 */
const CHANGED_PATHS = [
  'diff-index',
  '--cached',
  '--name-status',
  '-z',
  '--no-renames',
  '--ignore-submodules=none',
  '--ita-invisible-in-index',
  'HEAD',
];

/** Past this many changes, the promotions are read before any change is matched against the policy. */
const FEW_CHANGES = 32;

/** A change as the quick path reads it: `blob` is not filled; `at` is its entry in the index file, or -1. */
interface QuickChange extends StagedChange {
  at: number;
}

/**
 * The changes git names, each with its mode from the index file, and where its staged blob is there. Where the index
 * does not say (not parsed, changed since, a path not found in it), the blob is unknown, never promoted, and the entry
 * counts as a link, which governs more. A deletion's old mode is not read: it counts as a link's, for the same reason.
 */
function changesIn(fields: string[], index: GitIndex | null): QuickChange[] {
  const changes: QuickChange[] = [];
  let hint = 0;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const status = fields[i]!.charAt(0) as StagedChange['status'];
    const p = fields[i + 1]!;
    if (status === 'D') {
      changes.push({ status, path: p, blob: '', at: -1, removesLink: true });
      continue;
    }
    // git names the paths in the index's order: the entry is nearly always the one after the last.
    const at =
      index === null || status === 'U'
        ? -1
        : hint < index.count && index.pathOf(hint) === p
          ? hint
          : findIn(index, p);
    if (at < 0) {
      changes.push({ status, path: p, blob: '', at, symlink: true });
      continue;
    }
    hint = at + 1;
    const mode = index!.modeOf(at);
    const change: QuickChange = { status, path: p, blob: '', at };
    // What a type change replaced is not read: it may have been a link, whose removal is judged (removedPaths).
    if (status === 'T') change.removesLink = true;
    if (mode === 0o160000) change.submodule = true;
    else if (mode === 0o120000) change.symlink = true;
    changes.push(change);
  }
  return changes;
}

/** The index entry at a path git named (as UTF-8; a name of other bytes is not looked up), or -1. */
function findIn(index: GitIndex, p: string): number {
  if (!(p as unknown as { isWellFormed(): boolean }).isWellFormed()) return -1;
  return index.find(/[^\x00-\x7f]/.test(p) ? Buffer.from(p, 'utf8').toString('latin1') : p);
}

/**
 * Learns the tree this index will commit (see readIndex), for a hook whose quick answer could not tell it before the
 * full check ran (the policy not yet validated, the recorded paths of a new ledger tip not yet cached).
 */
export function rememberIndexTree(cwd: string, env: NodeJS.ProcessEnv): void {
  const dirs = mayBeUndecoded(cwd, env) ? null : gitDirsOf(cwd, env);
  const read = dirs === null ? null : readIndex(dirs);
  read?.trees.save();
}

/** The index as read from its file, and what it says about this commit. */
interface IndexRead {
  /** HEAD's tree is known to govern exactly the entries this index governs: nothing governed is staged. */
  passes: boolean;
  trees: QuietTrees;
  dirs: GitDirs;
  head: string;
  /** The index file as read (compared whole later: its checksum is zeros under `index.skipHash`). */
  data: Buffer;
  /** Null when the index alone could not say (no validated policy, recorded paths not cached). */
  governed: { policyBlob: string; tip: string | null; digest: string } | null;
  /** The index parsed, when it could be. */
  index: GitIndex | null;
}

/** Null when the index or the refs are not readable here (git then answers). */
function readIndex(dirs: GitDirs): IndexRead | null {
  const head = refTarget(dirs, 'HEAD');
  const tip = refTarget(dirs, LEDGER_REF);
  if (!head || tip === undefined) return null;
  let data: Buffer;
  try {
    data = readFileSync(dirs.indexFile);
  } catch {
    return null;
  }
  const oidBytes = head.length / 2;
  const index = parseGitIndex(data, oidBytes);
  const cacheDir = cacheDirOf(dirs.commonDir);
  const trees = QuietTrees.read(cacheDir);
  const read: IndexRead = { passes: false, trees, dirs, head, data, governed: null, index };
  const policyAt = index ? index.find(POLICY_PATH) : -1;
  if (!index || policyAt < 0) return read;
  const policyBlob = index.oidOf(policyAt).toString('hex');
  const policy = validatedPolicy(cacheDir, policyBlob);
  if (!policy) return read;
  const { digest } = indexTree(index, oidBytes === 20 ? 'sha1' : 'sha256', {
    isGoverned: governedTest(policy, tip, cacheDir),
    // An excluded name added beside a governed one can be one file with it (fold-collisions.ts): git must answer.
    nameCounts: namesCanCollide(policy) ? isExcluded(policy) : undefined,
    known: (tree, dir) => trees.digestOf(tree, dir, policyBlob, tip),
    learn: (tree, dir, d) => trees.learnDigest(tree, dir, policyBlob, tip, d),
  });
  if (digest === null) return read;
  read.governed = { policyBlob, tip, digest };
  const headTree = trees.treeOf(head) ?? looseCommitTree(dirs, head);
  read.passes = headTree !== null && trees.digestOf(headTree, '', policyBlob, tip) === digest;
  return read;
}

/** The diff and the index read describe the same HEAD, policy and ledger tip, and the index did not change since. */
function isSameState(
  read: IndexRead,
  seen: { head: string; policyBlob: string; tip: string | null },
): boolean {
  if (read.head !== seen.head) return false;
  if (read.governed?.policyBlob !== seen.policyBlob || read.governed.tip !== seen.tip) return false;
  return isUnchanged(read);
}

/** The index file holds what was read (git, run since, read the same). */
function isUnchanged(read: IndexRead): boolean {
  try {
    return readFileSync(read.dirs.indexFile).equals(read.data);
  } catch {
    return false;
  }
}

/**
 * git found no path the digest counts on either side of any change: HEAD's tree governs exactly what the index
 * does, so its digest is the index's. Learned for the next run (the commit of a fresh clone or checkout is often packed).
 * A change whose HEAD side may be a link (a deletion, a change of type, a conflict) counts as one: HEAD's digest is
 * what is learned.
 */
function learnHeadFromDiff(
  read: IndexRead,
  headTreeLine: string | undefined,
  changes: readonly StagedChange[],
  counts: (path: string, link: boolean) => boolean,
): void {
  const { policyBlob, tip, digest } = read.governed!;
  const [tree, type] = (headTreeLine ?? '').split(' ');
  if (type !== 'tree' || !tree) return;
  const mayBeLink = (c: StagedChange) =>
    c.symlink === true ||
    c.submodule === true ||
    c.removesLink === true ||
    c.status === 'T' ||
    c.status === 'U';
  if (changes.some((c) => counts(c.path, mayBeLink(c)))) return;
  read.trees.learnTree(read.head, tree);
  read.trees.learnDigest(tree, '', policyBlob, tip, digest);
}

/** Whether an entry counts in the index's digest (readIndex): governed or maybe so, or an excluded name it counts. */
function countsIn(
  policy: Policy,
  isGoverned: (path: string, link?: boolean) => boolean | null,
): (path: string, link: boolean) => boolean {
  const excluded = namesCanCollide(policy) ? isExcluded(policy) : () => false;
  return (p, link) => isGoverned(p, link) !== false || excluded(p);
}

function isExcluded(policy: Policy): (path: string) => boolean {
  const matcher = governedMatcher(policy);
  return (p) => matcher.classify(p) === 'ungoverned';
}

/**
 * Whether a name the commit adds, governed or excluded, is one file with another staged name on a checkout that
 * ignores case (fold-collisions.ts; the full check tells which pairs it refuses). Only such a name can make a pair
 * the gates refuse: any other name is governed exactly as its folded twin is. Every staged name is folded for it, so
 * only commits that add such names pay for it. Without the index read here, git's full check answers.
 */
function makesFoldTwin(
  changes: readonly StagedChange[],
  policy: Policy,
  isGoverned: (path: string, link?: boolean) => boolean | null,
  index: GitIndex | null,
): boolean {
  const excluded = isExcluded(policy);
  const added = changes.filter(
    (c) =>
      addsName(c) &&
      (excluded(c.path) || isGoverned(c.path, c.submodule === true || c.symlink === true) !== false),
  );
  if (added.length === 0) return false;
  if (index === null) return true;
  const folded = new Map(added.map((c) => [foldedPath(c.path), c.path]));
  for (let i = 0; i < index.count; i++) {
    const path = index.pathOf(i);
    const twin = folded.get(foldedPath(path));
    if (twin !== undefined && twin !== path) return true;
  }
  return false;
}

/**
 * Whether a path is governed: by the policy, and for the rest by the paths recorded at the ledger tip (read when
 * first asked); null when that depends on recorded paths not cached yet. `link`: a symbolic link or submodule.
 */
function governedTest(
  policy: Policy,
  tip: string | null,
  cacheDir: string,
): (path: string, link?: boolean) => boolean | null {
  const matcher = governedMatcher(policy);
  let isRecorded: ((p: string) => boolean) | null | undefined;
  return (p, link = false) => {
    const c = matcher.classify(p, link);
    if (c !== 'if-recorded') return c === 'governed';
    if (tip === null) return false;
    if (isRecorded === undefined) {
      const file = readText(path.join(cacheDir, pathsName(tip)));
      const recorded = file === null ? null : recordedPathsBody(file);
      isRecorded = recorded === null ? null : recordedPathTest(recorded);
    }
    return isRecorded === null ? null : isRecorded(p);
  };
}

/**
 * The recorded paths file is the paths joined by NUL (no path holds one). The first few paths are looked for in its
 * text: splitting 10,000 paths into a Set costs more (about 4 ms) than a few scans of 200 KB.
 */
function recordedPathTest(recorded: string): (p: string) => boolean {
  if (recorded === '') return () => false;
  const text = `\0${recorded}\0`;
  let asked = 0;
  let paths: { has(path: string): boolean } | null = null;
  let folded: string | null = null;
  return (p) => {
    if (paths) return paths.has(p);
    if (++asked > 8) paths = recordedAsCheckedOut(new Set(recorded.split('\0')));
    if (text.includes(`\0${p}\0`)) return true;
    // As a checkout that ignores case or Unicode normalization places it (recordedAsCheckedOut).
    folded ??= foldedPath(text);
    return folded.includes(`\0${foldedPath(p)}\0`);
  };
}

/**
 * What the full check decided as promoted under this governance at this ledger tip, or null. Only for a commit that
 * leaves the governance files as committed (so the committed objects name the governance); one that removes a
 * governed path never gets here (the full check reports each such deletion).
 */
async function promotionsFor(
  changes: readonly StagedChange[],
  policy: Policy,
  committed: Omit<GovernanceObjects, 'keysTree'>,
  tip: string | null,
  cacheDir: string,
  /** cat-file's answer for the keys directory at HEAD ("<id> tree <size>", or "... missing"). */
  keysAt: () => Promise<string>,
): Promise<PromotedTest | null> {
  if (changesGovernance(policy, changes)) return null;
  if (/[\n\0]/.test(policy.keysDir)) return null; // cat-file reads one name per line
  const [keysId, keysType] = (await keysAt()).split(' ');
  const keysTree = keysType === 'tree' ? keysId! : null;
  const digest = governanceDigestOf(cacheDir, { ...committed, keysTree });
  return digest === null ? null : readPromotions(promotedFile(cacheDir, digest, tip));
}

const PASSES: QuickAnswer = { passes: true };
const UNSURE: QuickAnswer = { passes: false };

/**
 * Called by the full check once it has validated the staged policy stored as blob `id`. The globs' compiled
 * expressions are kept beside it (`$globs`), so the quick answer need not compile them again.
 */
export async function rememberValidPolicy(cacheDir: string, id: string, policy: Policy): Promise<void> {
  // Unwritten (a read-only git dir): the next commit validates the policy again.
  const kept = { ...policy, $globs: globExpressions(policy) };
  await replaceCacheFile(path.join(cacheDir, validPolicyName(id)), JSON.stringify(kept));
}

/** The staged policy stored as blob `id`, as the full check last validated it, or null. */
function validatedPolicy(cacheDir: string, id: string): Policy | null {
  const policy = readJson<Policy & { $globs?: unknown }>(path.join(cacheDir, validPolicyName(id)));
  if (!isPolicyShaped(policy)) return null;
  adoptGlobExpressions(policy.$globs);
  return policy;
}

/** Enough of the shape for the matcher; the file was written by the full check, but it sits on disk. */
function isPolicyShaped(p: Policy | null): p is Policy {
  const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
  return p !== null && typeof p.keysDir === 'string' && strings(p.protect) && strings(p.exclude);
}

/** The common git dir, from git, when the environment or the layout is one gitDirsOf leaves to git. */
async function commonDirFromGit(cwd: string, env: NodeJS.ProcessEnv): Promise<string | null> {
  const out = await run(['rev-parse', '--path-format=absolute', '--git-common-dir'], cwd, env);
  // git prints the path byte for byte, newlines and all; one that is not UTF-8 is left to the full check.
  if (out === null || !isUtf8(out)) return null;
  const text = out.toString('utf8');
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

/** Where Repository.cacheDir is, from the common git dir. */
function cacheDirOf(commonDir: string): string {
  return path.join(commonDir, 'delegate-git', 'cache');
}

/**
 * "3": the kept expressions are dotAll, and protect's ignore case (governed-paths.ts); "4": keysDir is kept as git
 * names it (`./keys` as `keys`, policy.ts). Older ones are not read.
 */
function validPolicyName(id: string): string {
  return `policy-4-${id}.json`;
}

/** stdout of a git command, or null when it fails in any way (the full check then says why). */
async function run(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  input?: string,
): Promise<Buffer | null> {
  // Loaded when first needed (4-5 ms): the answer from the index starts no process.
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    const child = spawn('git', args, {
      cwd,
      env: { ...env, GIT_NO_REPLACE_OBJECTS: '1' }, // as gitEnv (git.ts), which this path does not load
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'ignore'],
    });
    const chunks: Buffer[] = [];
    child.stdout!.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', () => resolve(null));
    child.on('close', (code) => resolve(code === 0 ? Buffer.concat(chunks) : null));
    if (input !== undefined) {
      // git may exit before reading (outside a repository): its answer is the exit code, not a broken pipe.
      child.stdin!.on('error', () => {});
      child.stdin!.end(input);
    }
  });
}

/** Cache files are read synchronously: nothing else runs meanwhile, and a thread-pool round trip costs more. */
function readJson<T>(file: string): T | null {
  const text = readText(file);
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
