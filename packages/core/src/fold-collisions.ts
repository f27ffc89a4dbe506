/**
 * Two names of one tree that a checkout ignoring case or Unicode normalization (macOS, Windows) writes to one file.
 * Where one is governed and the other is not, the gates judge the governed name's blob, but the file holds whichever
 * git writes last: an excluded `src/gen/core.ts` beside a protected `src/Gen/core.ts` puts unjudged content where
 * the protected file is. The ungoverned name is refused.
 */
import type { CheckResult } from './checks.js';
import { foldedPath, governedMatcher } from './governed-paths.js';
import type { Policy } from './policy.js';
import { shownPath } from './shown-path.js';
import { isLinkMode } from './staged-changes.js';

/**
 * Whether two names of one file can differ in governance under this policy. Protect globs, recorded paths and the
 * governance files are all matched folded, so only `exclude`, matched as written, tells such names apart: without
 * it no tree needs listing for this.
 */
export function namesCanCollide(policy: Policy): boolean {
  return policy.exclude.length > 0;
}

export interface FoldCollision<F> {
  /** The ungoverned name. */
  file: F;
  /** The governed name it is one file with. */
  governed: string;
}

/** The ungoverned files of a tree that fold to the name of a governed one. */
export function foldCollisions<F extends { path: string }>(
  files: readonly F[],
  isGoverned: (file: F) => boolean,
): Array<FoldCollision<F>> {
  const governedByFold = new Map<string, string>();
  const ungoverned: Array<{ file: F; folded: string }> = [];
  for (const file of files) {
    const folded = foldedPath(file.path);
    if (isGoverned(file)) {
      if (!governedByFold.has(folded)) governedByFold.set(folded, file.path);
    } else ungoverned.push({ file, folded });
  }
  const collisions: Array<FoldCollision<F>> = [];
  for (const { file, folded } of ungoverned) {
    const governed = governedByFold.get(folded);
    if (governed !== undefined) collisions.push({ file, governed });
  }
  return collisions;
}

/**
 * Each ungoverned file of `files` that is one file with a governed one (`governed`, a subset of `files`), as a
 * refused result: counted as governed and not promoted, so every output and exit code counts it.
 */
export function collisionRefusals<F extends { path: string; blob: string }>(
  policy: Policy,
  files: readonly F[],
  governed: readonly F[],
): CheckResult[] {
  if (!namesCanCollide(policy)) return [];
  const isGoverned = new Set(governed);
  return foldCollisions(files, (f) => isGoverned.has(f)).map(({ file, governed }) => ({
    path: file.path,
    blob: file.blob,
    sha256: '',
    promoted: false,
    governed: true,
    reason: collisionReason(file.path, governed),
    by: [],
  }));
}

/**
 * collisionRefusals among `files` (a tree or the index, listed as git lists them) for pairs holding a name of
 * `added`: a gate that judges a change looks only at the names it brings, which alone can make a new pair. The
 * recorded paths are read only when one of the few names concerned is governed by them alone.
 */
export async function collisionsWithAdded(
  policy: Policy,
  files: readonly { path: string; blob: string; mode: string }[],
  added: Iterable<string>,
  recordedPaths: () => Promise<{ has(path: string): boolean }>,
): Promise<CheckResult[]> {
  if (!namesCanCollide(policy)) return [];
  const folded = new Set(Array.from(added, foldedPath));
  if (folded.size === 0) return [];
  const near = files.filter((f) => folded.has(foldedPath(f.path)));
  if (near.length < 2) return [];
  const matcher = governedMatcher(policy);
  const recorded = near.some((f) => matcher.classify(f.path, isLinkMode(f.mode)) === 'if-recorded')
    ? await recordedPaths()
    : null;
  const governed = near.filter((f) => matcher(f.path, recorded?.has(f.path) ?? false, isLinkMode(f.mode)));
  return collisionRefusals(policy, near, governed);
}

/** The reason a gate gives for an ungoverned name that is one file with `governed` on such a checkout. */
export function collisionReason(path: string, governed: string): string {
  // Names in other Unicode forms print alike: their characters beyond ASCII tell them apart.
  const alike = path.normalize('NFC') === governed.normalize('NFC');
  const shown = alike
    ? `${shownPath(governed)} (beyond ASCII it holds ${codePoints(governed)}, this name ${codePoints(path)})`
    : shownPath(governed);
  return `on a checkout that ignores case or Unicode normalization (macOS, Windows) this is one file with the governed ${shown}, and this name is not governed (exclude): git writes one over the other, so unjudged content can take the governed file's place. Rename or remove one of the two.`;
}

function codePoints(text: string): string {
  const beyond = Array.from(text).filter((ch) => ch.codePointAt(0)! > 0x7f);
  return (
    beyond.map((ch) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`).join(' ') ||
    'none'
  );
}
