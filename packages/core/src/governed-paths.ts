/**
 * The pure question "is this path governed?" (DESIGN 4.1), apart from the policy schema so the pre-commit hook's
 * quick path can ask it without loading the schema library.
 */
import picomatch from 'picomatch';
import type { Policy } from './policy.js';

export const POLICY_PATH = '.delegate-git/policy.json';
export const DEFAULT_KEYS_DIR = '.delegate-git/keys';

/** The policy file and the keys directory: always governed, whatever `exclude` says. */
export function isGovernanceFile(policy: Policy, path: string): boolean {
  return governanceFiles(policy)(path);
}

/**
 * isGovernanceFile for one policy, its keys prefix built once (the hook asks about every staged path). Case is
 * ignored, as for protect globs: on a file system that ignores case, `.DELEGATE-GIT/keys/x.json` is checked out into
 * the keys directory and `.Delegate-Git/policy.json` over the policy, so such a path needs what they need.
 */
function governanceFiles(policy: Policy): (path: string) => boolean {
  const keysPrefix = foldedPath(`${policy.keysDir}/`);
  return (path) => {
    const folded = foldedPath(path);
    return folded === POLICY_PATH || folded.startsWith(keysPrefix);
  };
}

/**
 * A path as a checkout that ignores case and Unicode normalization places it: two paths it folds together are one
 * file. Each character upper-cased, then lower-cased: lower case alone leaves apart what Unicode's case folding
 * joins (`ſ` and `s`, `ς` and `σ`, `µ` and `μ`). A character whose case changes its length (`ß` upper-cases to `SS`)
 * keeps it, so a glob's `?` still matches it. The result is composed again (NFC).
 */
export function foldedPath(path: string): string {
  const text = composed(path);
  if (!/[^\x00-\x7f]/.test(text)) return text.toLowerCase();
  let folded = '';
  for (const ch of text) {
    const upper = ch.toUpperCase();
    const lower = ([...upper].length === 1 ? upper : ch).toLowerCase();
    folded += [...lower].length === 1 ? lower : ch;
  }
  // Folding can leave what composes anew: `J̌` (J and a combining caron, with no composed capital) folds to `ǰ`.
  return composed(folded);
}

/** The paths the ledger recorded, as a set or as the path index. */
export type RecordedPaths = ReadonlySet<string> | { has(path: string): boolean; paths(): Iterable<string> };

/**
 * The recorded paths as a checkout that ignores case or Unicode normalization (macOS, Windows) places them, as protect
 * globs and the governance paths are matched: with `INSTALL.sh` recorded, an `install.sh` beside it is checked out
 * to the same file there, so it is governed too. The folded set is built on the first path not recorded as it is.
 */
export function recordedAsCheckedOut(recorded: RecordedPaths): { has(path: string): boolean } {
  let folded: Set<string> | null = null;
  return {
    has(path) {
      if (recorded.has(path)) return true;
      folded ??= new Set(Array.from('paths' in recorded ? recorded.paths() : recorded, foldedPath));
      return folded.has(foldedPath(path));
    },
  };
}

/**
 * A path or glob in Unicode's composed form (NFC). macOS's file systems take `données` written with a combining
 * accent (NFD) for the same name as `données` (NFC), so a checkout puts a file committed under either name in the
 * same place: what protect governs must not depend on which form a commit used. ASCII is left as it is (fast).
 */
function composed(text: string): string {
  return /[^\x00-\x7f]/.test(text) ? text.normalize('NFC') : text;
}

/**
 * The keys directory a policy change moves the trust root to, or null. Every file already there becomes a key file
 * with that change, not only those it adds, so each is judged with it: a directory filled while it was not the keys
 * directory (nothing governed it then) would otherwise bring its keys in on the approval of a one-line policy edit.
 */
export function keysMovedTo(before: Policy, after: Policy | null): string | null {
  return after !== null && after.keysDir !== before.keysDir ? after.keysDir : null;
}

/** Whether any of these changes adds, edits, deletes or moves away a governance file. */
export function changesGovernance(
  policy: Policy,
  changes: ReadonlyArray<{ path: string; from?: string }>,
): boolean {
  const isGovernance = governanceFiles(policy);
  return changes.some((c) => isGovernance(c.path) || (c.from !== undefined && isGovernance(c.from)));
}

export type Governedness = 'governed' | 'ungoverned' | 'if-recorded';

/**
 * `link`: the entry at the path is a symbolic link (mode 120000) or a gitlink (160000). Checked out, files appear
 * under its path that the tree never lists, so it is governed wherever a protect glob could match a path beneath it
 * (coversBeneath), or a governance file lies beneath it, as well as where a file there would be.
 */
export interface GovernedMatcher {
  (path: string, everRecorded: boolean, link?: boolean): boolean;
  isProtected(path: string, link?: boolean): boolean;
  /** The answer without the ledger, when the policy alone decides; 'if-recorded' when the ledger must be asked. */
  classify(path: string, link?: boolean): Governedness;
  /** Whether some protect glob could match a path strictly beneath `path` (see globsCoverBeneath). */
  coversBeneath(path: string): boolean;
}

/**
 * Governed = protect globs + paths the ledger has ever recorded, minus exclude; the governance files always.
 * Built once per run, each glob compiled once to a regular expression (the hook asks about every staged path).
 */
export function governedMatcher(policy: Policy): GovernedMatcher {
  // protect ignores case and Unicode normalization, exclude does not: git checks `SRC/evil.js` out into an existing
  // `src/` on a file system that ignores case (macOS, Windows), so `src/**` must govern it; governing more, never
  // less, stays safe.
  const protect = globsMatcher(policy.protect.map(foldedPath), true);
  const exclude = globsMatcher(policy.exclude, false);
  const isGovernance = governanceFiles(policy);
  // Built when a link is first asked about: most commits stage none, and the hook asks about every staged path.
  let beneath: ((path: string) => boolean) | undefined;
  const coversBeneath = (path: string) => {
    beneath ??= globsCoverBeneath(policy.protect.map(foldedPath));
    return beneath(foldedPath(path));
  };
  // A link over the policy's or the keys' directory would put files of its target's choosing where the governance
  // is read from: always governed, as the governance files are.
  const holdsGovernance = (path: string) => {
    const folded = `${foldedPath(path)}/`;
    return POLICY_PATH.startsWith(folded) || `${foldedPath(policy.keysDir)}/`.startsWith(folded);
  };
  // `exclude` takes a link out as it takes out a file, by the link's own path: excluding is a reviewed policy change,
  // and it is the way to keep a submodule (which no record can promote) beside protected paths.
  const classify = (path: string, link = false): Governedness => {
    if (isGovernance(path) || (link && holdsGovernance(path))) return 'governed';
    if (beyondMatching(path)) return 'governed';
    if (exclude(path)) return 'ungoverned';
    return protect(foldedPath(path)) || (link && coversBeneath(path)) ? 'governed' : 'if-recorded';
  };
  const isProtected = (path: string, link = false) => classify(path, link) === 'governed';
  const governed = (path: string, everRecorded: boolean, link = false) => {
    const c = classify(path, link);
    return c === 'governed' || (c === 'if-recorded' && everRecorded);
  };
  return Object.assign(governed, { isProtected, classify, coversBeneath });
}

/**
 * The longest name of one path segment a glob is matched against. A glob's expression backtracks through a segment
 * once per `*` in it (policy.ts allows three), so a segment a crafted commit makes thousands of characters long held
 * `verify` for minutes (rt41 f04). No common file system keeps a longer name (255 bytes), so a path with one cannot
 * be checked out: it is governed without matching, which errs on the safe side.
 */
const MATCHED_SEGMENT_LENGTH = 255;

function beyondMatching(path: string): boolean {
  if (path.length <= MATCHED_SEGMENT_LENGTH) return false;
  return path.split('/').some((segment) => segment.length > MATCHED_SEGMENT_LENGTH);
}

/**
 * Whether one of `globs` could match some path strictly beneath `path`: what a symbolic link or a submodule there
 * brings into the work tree on checkout. Each glob reaches beneath its static base directory (picomatch.scan), so
 * it covers a path equal to that base, an ancestor of it, or a descendant of it; a glob with an empty base (`**\/*.js`)
 * covers every path. A glob with no `**`, brace, bracket, parenthesis or escape matches only paths of its own
 * number of segments (`*` and `?` never match a slash), so `*.js` reaches beneath no path at all, and `src/*.js`
 * beneath `src` but not beneath `src/lib`. Case is ignored, as for protect. It may answer yes where no file could
 * match (governing more is safe); never no where one could.
 */
export function globsCoverBeneath(globs: readonly string[]): (path: string) => boolean {
  const reaches = globs.map(reachOf);
  return (path) => {
    const folded = path.toLowerCase();
    const depth = folded.split('/').length;
    return reaches.some(
      ({ base, segments }) =>
        (segments === null || segments > depth) &&
        (base === '' || folded === base || base.startsWith(`${folded}/`) || folded.startsWith(`${base}/`)),
    );
  };
}

/** A glob's static base directory (folded), and how many segments every path it matches has (null: any number). */
function reachOf(glob: string): { base: string; segments: number | null } {
  const scan = picomatch.scan(glob);
  // A negated glob matches everything outside its pattern.
  if (scan.negated) return { base: '', segments: null };
  const base = scan.base.replace(/\/+$/, '').toLowerCase();
  const fixed = !/\*\*|[{}()[\]\\]/.test(scan.glob);
  const segments = fixed
    ? (base === '' ? 0 : base.split('/').length) + (scan.glob === '' ? 0 : scan.glob.split('/').length)
    : null;
  return { base, segments };
}

/** A glob as the regular expression picomatch compiles it to (kept with a validated policy: quiet-commit.ts). */
export interface GlobExpression {
  glob: string;
  nocase: boolean;
  source: string;
  flags: string;
}

export function globExpressions(policy: Policy): GlobExpression[] {
  const of = (glob: string, nocase: boolean) => {
    const re = expressionOf(glob, nocase);
    return { glob, nocase, source: re.source, flags: re.flags };
  };
  return [...policy.protect.map((g) => of(foldedPath(g), true)), ...policy.exclude.map((g) => of(g, false))];
}

/**
 * Takes expressions compiled by an earlier run, so that this one need not compile them again: picomatch's compiler
 * costs a process V8 has not warmed up about 2 ms per glob, in a hook whose whole answer takes about 10.
 */
export function adoptGlobExpressions(list: unknown): void {
  if (!Array.isArray(list)) return;
  for (const e of list as Array<Partial<GlobExpression>>) {
    if (typeof e?.glob !== 'string' || typeof e.source !== 'string' || typeof e.flags !== 'string') continue;
    if (typeof e.nocase !== 'boolean' || !e.flags.includes('s') || e.flags.includes('i') !== e.nocase)
      continue;
    const key = expressionKey(e.glob, e.nocase);
    if (expressions.has(key)) continue;
    try {
      expressions.set(key, new RegExp(e.source, e.flags));
    } catch {
      // Not an expression: compiled again when asked for.
    }
  }
}

const expressions = new Map<string, RegExp>();

function expressionKey(glob: string, nocase: boolean): string {
  return `${nocase ? 'i' : '-'}${glob}`;
}

function expressionOf(glob: string, nocase: boolean): RegExp {
  const key = expressionKey(glob, nocase);
  let re = expressions.get(key);
  if (!re) {
    // picomatch writes `**` with `.`, which does not match a line break (\n, \r, U+2028, U+2029) unless the
    // expression is dotAll: without it, "src/**" would not govern a file named "src/a\nb.ts".
    const compiled = picomatch.makeRe(glob, { dot: true, nocase });
    re = new RegExp(compiled.source, `${compiled.flags.replace('s', '')}s`);
    expressions.set(key, re);
  }
  return re;
}

/** picomatch's own test, without its per-call overhead: the path equals the glob, or the glob's expression matches. */
function globsMatcher(globs: readonly string[], nocase: boolean): (path: string) => boolean {
  const key = `${nocase}${JSON.stringify(globs)}`;
  let matcher = compiledGlobs.get(key);
  if (!matcher) {
    const fold = nocase ? (text: string) => text.toLowerCase() : (text: string) => text;
    const compiled = globs.map((glob) => ({ glob: fold(glob), re: expressionOf(glob, nocase) }));
    const [only] = compiled;
    // One glob is the common policy: asked without a closure per path.
    matcher =
      compiled.length === 0
        ? () => false
        : compiled.length === 1
          ? (path) => fold(path) === only!.glob || only!.re.test(path)
          : (path) => compiled.some(({ glob, re }) => fold(path) === glob || re.test(path));
    compiledGlobs.set(key, matcher);
  }
  return matcher;
}

// Compiling a glob costs far more than matching it, and one run builds matchers for the same policy many times.
const compiledGlobs = new Map<string, (path: string) => boolean>();
