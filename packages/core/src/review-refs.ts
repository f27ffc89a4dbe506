/**
 * Review refs: ref namespaces a server's administrator leaves to review (`git config delegate-git.reviewRefs
 * refs/review/`, one value per namespace). With a reviewThreshold of 2 or more the author's commit is refused
 * everywhere until the second reviewer approves it, and that reviewer needs a way to fetch it: a push there is taken
 * unjudged. Nothing else changes: such refs never count as holding content for the refs the gate does judge, so a
 * commit only they hold is judged wherever else it is pushed. A value that could reach a branch, a tag, the ledger
 * or a replace ref is refused, and with it every push, until the administrator fixes it.
 */

export type ReviewRefs = { prefixes: string[] } | { invalid: string };

/** Namespaces the gate must always judge (or, for replace refs, always refuse). */
const JUDGED = ['refs/heads/', 'refs/tags/', 'refs/notes/', 'refs/replace/'];

export function reviewRefsIn(values: readonly string[]): ReviewRefs {
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
          'review (a ref prefix ending in "/", such as refs/review/, outside refs/heads, refs/tags, refs/notes and ' +
          "refs/replace), so no push is taken until the server's administrator fixes it " +
          '(`git config --unset-all delegate-git.reviewRefs`, or a namespace such as refs/review/)',
      };
    prefixes.push(prefix);
  }
  return { prefixes };
}

export function isReviewRef(ref: string, review: ReviewRefs): boolean {
  return 'prefixes' in review && review.prefixes.some((prefix) => ref.startsWith(prefix));
}

/** The `git rev-list` arguments naming every ref that holds judged content: all but notes and review refs. */
export function judgedRefsArgs(review: ReviewRefs): string[] {
  const prefixes = 'prefixes' in review ? review.prefixes : [];
  return ['--exclude=refs/notes/*', ...prefixes.map((prefix) => `--exclude=${prefix}*`), '--all'];
}
