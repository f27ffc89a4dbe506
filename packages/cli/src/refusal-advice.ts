import type { RefusalKind } from '@delegate-git/core/policy';

/**
 * What allows, or keeps, a refused change that no record can promote, by its kind: the same words where a commit is
 * refused and where a push is. Each is one line, for the push's advice and the check report alike.
 */
export const RULES_ADVICE: Record<Exclude<RefusalKind, 'content'>, string> = {
  'protected deletion':
    'A protected path may be deleted once a reviewer-approved policy change that turns protectDeletes off is in force on the branch (committed and pushed on its own first: a push is judged by the rules in force on its branch before it); otherwise restore it.',
  'governance deletion':
    'The policy file and key files are never deleted: restore them; to retire a key, revoke it (`delegate-git keys revoke`).',
  submodule:
    'No record promotes a submodule: remove it, or exclude its path in a reviewer-approved policy change that is in force on the branch first (pushed before it).',
};
