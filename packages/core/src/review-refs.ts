/**
 * Review refs: ref namespaces a server's administrator leaves to review (`git config delegate-git.reviewRefs
 * refs/review/`, one value per namespace). With a reviewThreshold of 2 or more the author's commit is refused
 * everywhere until the second reviewer approves it, and that reviewer needs a way to fetch it: a push there is taken
 * unjudged. Nothing else changes: such refs never count as holding content for the refs the gate does judge, so a
 * commit only they hold is judged wherever else it is pushed. A value that could reach a branch, a tag, the ledger
 * or a replace ref is refused, and with it every push, until the administrator fixes it.
 *
 * Which update is taken unjudged is decided strictly (its exact name, on a plain repository: notPlain); which refs
 * count as holding nothing is decided loosely (any letter case, under any git namespace), so a ref git stores or
 * lists under another spelling than it was pushed as errs on the judged side (rt59 f01, f02).
 */
import { type Dirent, existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export type ReviewRefs = { prefixes: string[] } | { invalid: string };

/** Namespaces the gate must always judge (or, for replace refs, always refuse), and git's namespaces of others. */
const JUDGED = [
  'refs/heads/',
  'refs/tags/',
  'refs/notes/',
  'refs/replace/',
  'refs/namespaces/',
  'refs/remotes/',
];

/**
 * The configured values, read strictly. Under a git namespace (GIT_NAMESPACE) every ref is stored elsewhere than it
 * is named, so no namespace is left to review there: every push is judged.
 */
export function reviewRefsIn(values: readonly string[], env: NodeJS.ProcessEnv = {}): ReviewRefs {
  const prefixes: string[] = [];
  for (const value of values) {
    const prefix = value.trim();
    const lower = prefix.toLowerCase();
    if (
      !/^refs\/[A-Za-z0-9._/-]+\/$/.test(prefix) ||
      prefix.includes('..') ||
      prefix.includes('//') ||
      JUDGED.some((judged) => lower.startsWith(judged) || judged.startsWith(lower))
    )
      return {
        invalid:
          `the server's delegate-git.reviewRefs value ${JSON.stringify(value)} is not a namespace it can leave to ` +
          'review (a ref prefix ending in "/", such as refs/review/, outside refs/heads, refs/tags, refs/notes, ' +
          "refs/replace, refs/namespaces and refs/remotes), so no push is taken until the server's administrator " +
          'fixes it (`git config --unset-all delegate-git.reviewRefs`, or a namespace such as refs/review/)',
      };
    prefixes.push(prefix);
  }
  return { prefixes: env.GIT_NAMESPACE ? [] : prefixes };
}

/** Whether a pushed ref is named as a review ref: its exact name (an update is taken unjudged only then). */
export function isReviewRef(ref: string, review: ReviewRefs): boolean {
  return 'prefixes' in review && review.prefixes.some((prefix) => ref.startsWith(prefix));
}

/** Whether a ref the server lists counts as holding nothing judged: a review ref in any case, under any namespace. */
export function holdsNothingJudged(ref: string, review: ReviewRefs): boolean {
  if (!('prefixes' in review)) return false;
  const lower = ref.toLowerCase().replace(/^refs\/namespaces\/.*?\/(?=refs\/)/, '');
  return review.prefixes.some((prefix) => lower.startsWith(prefix.toLowerCase()));
}

/**
 * The `git rev-list` arguments naming every ref that holds judged content: all but notes and review refs, the review
 * refs matched in any letter case and under any git namespace.
 */
export function judgedRefsArgs(review: ReviewRefs): string[] {
  const prefixes = 'prefixes' in review ? review.prefixes : [];
  const excluded = prefixes.flatMap((prefix) => {
    const anyCase = [...prefix]
      .map((c) => (/[a-z]/i.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : c))
      .join('');
    return [`--exclude=${anyCase}*`, `--exclude=refs/namespaces/*/${anyCase}*`];
  });
  return ['--exclude=refs/notes/*', ...excluded, '--all'];
}

/**
 * Why this repository is not plain enough to leave refs unjudged, or null. Whether a ref holds judged content is told
 * by its name, so anything that makes a name lead elsewhere, or holds a commit by no name, could make review content
 * count as held, or a review push move a judged ref (rt59 f03, f04; rt60): a symbolic ref other than HEAD naming a
 * branch (in any form git reads: `ref:` files, symbolic links), a symbolic link under refs/, a detached HEAD, a linked
 * worktree (its HEAD holds a commit). Read from the files git keeps them in, on every push while review refs are set.
 */
export function notPlain(commonDir: string): string | null {
  // git 2.45's reftable keeps symbolic refs where this does not read them (rt60: untested here, git 2.39).
  if (existsSync(path.join(commonDir, 'reftable'))) return 'it keeps its refs in a reftable, not in files';
  const worktrees = path.join(commonDir, 'worktrees');
  if (existsSync(worktrees) && readdirSync(worktrees).length > 0)
    return `it has linked worktrees (${worktrees}), whose HEADs hold commits by no ref name`;
  const head = path.join(commonDir, 'HEAD');
  if (lstatSync(head, { throwIfNoEntry: false })?.isSymbolicLink()) return 'its HEAD is a symbolic link';
  const target = /^ref:\s*(\S+)/.exec(readFileSync(head, 'utf8'))?.[1];
  if (target === undefined || !target.startsWith('refs/heads/'))
    return 'its HEAD does not name a branch (refs/heads/...)';
  const walk = (dir: string): string | null => {
    let entries: Dirent[];
    try {
      entries = readdirSync(path.join(commonDir, dir), { withFileTypes: true });
    } catch {
      return null;
    }
    for (const entry of entries) {
      const name = `${dir}/${entry.name}`;
      if (entry.isSymbolicLink()) return `${name} is a symbolic link`;
      if (entry.isDirectory()) {
        const found = walk(name);
        if (found) return found;
      } else if (/^ref:/.test(readFileSync(path.join(commonDir, name), 'utf8').slice(0, 8)))
        return `${name} is a symbolic ref`;
    }
    return null;
  };
  return walk('refs');
}

export function notPlainReason(why: string): string {
  return (
    `the server leaves refs to review (delegate-git.reviewRefs) only in a plain repository, and ${why}, so no push ` +
    "is taken until the server's administrator removes that, or unsets delegate-git.reviewRefs"
  );
}
