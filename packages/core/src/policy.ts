/**
 * The committed policy (DESIGN 3.5): its schema, and when deleting a governed path is refused.
 */
import * as z from 'zod/mini';
import {
  DEFAULT_KEYS_DIR,
  type GovernedMatcher,
  governedMatcher,
  isGovernanceFile,
  POLICY_PATH,
} from './governed-paths.js';
import { parseWithSchema, printableLine } from './schema.js';

// The path questions live apart from the schema so the pre-commit hook can ask them without loading zod.
export * from './governed-paths.js';

const relativeDir = z.string().check(
  z.minLength(1),
  z.refine(
    (s) => !s.startsWith('/') && !s.split('/').includes('..') && !s.includes('\\'),
    'must be a repository-relative POSIX path without ..',
  ),
  // It is named in messages and in the commands init tells a newcomer to run.
  printableLine,
  z.refine((s) => canonicalDir(s) !== '', 'must name a directory below the top of the repository'),
  // Every file in the keys directory is read as a key: the policy file there would be one too. Nor can the
  // policy's own path be a directory.
  z.refine((s) => {
    const dir = canonicalDir(s).toLowerCase();
    const policy = POLICY_PATH.toLowerCase();
    return !policy.startsWith(`${dir}/`) && dir !== policy && !dir.startsWith(`${policy}/`);
  }, `must neither hold nor be the policy file (${POLICY_PATH}): name a directory of its own, such as .delegate-git/keys`),
  // git tracks nothing under a .git segment (in any case), so no key file there could ever be committed.
  z.refine(
    (s) => !s.split('/').some((segment) => segment.toLowerCase() === '.git'),
    'must not be inside a .git directory, where git tracks nothing: name a directory of the work tree, such as .delegate-git/keys',
  ),
);

/**
 * `./keys/` or `keys//a` as git names such a directory (`keys`, `keys/a`): git's paths have no `.` or empty segments,
 * and the keys directory is compared with them, so `./keys` kept as written would govern no key file at all.
 */
function canonicalDir(dir: string): string {
  return dir
    .split('/')
    .filter((segment) => segment !== '' && segment !== '.')
    .join('/');
}

/** The most `*` one segment of a glob may hold: its expression backtracks once per `*` (governed-paths.ts). */
const STARS_PER_SEGMENT = 3;

/** The wildcards of one segment: `**` alone is every directory; anywhere else a run of `*` is one `*` (rt43 f01). */
function starsIn(segment: string): number {
  return segment === '**' ? 0 : (segment.match(/\*+/g)?.length ?? 0);
}

const glob = z.string().check(
  z.minLength(1),
  z.refine(
    (text) => text.split('/').every((segment) => starsIn(segment) <= STARS_PER_SEGMENT),
    `has more than ${STARS_PER_SEGMENT} \`*\` in one path segment, and matching it could take hours: use fewer, or several globs`,
  ),
);

const policySchema = z.strictObject({
  version: z.literal(1),
  repositoryId: z.string().check(z.regex(/^[A-Za-z0-9-]{8,64}$/, 'must be 8-64 letters, digits or dashes')),
  keysDir: z._default(relativeDir, DEFAULT_KEYS_DIR),
  protect: z._default(z.array(glob), []),
  exclude: z._default(z.array(glob), []),
  requireReview: z._default(z.boolean(), false),
  reviewThreshold: z._default(z.int().check(z.minimum(1), z.maximum(100)), 1),
  mode: z._default(z.enum(['enforce', 'warn']), 'enforce'),
  protectDeletes: z._default(z.boolean(), false),
});

export type Policy = z.infer<typeof policySchema>;

export function parsePolicy(text: string, source = POLICY_PATH): Policy {
  const policy = parseWithSchema(
    policySchema,
    text,
    source,
    'POLICY',
    // The index or the work tree may hold the broken copy (`git checkout -- <path>` copies the index's): HEAD's is put back in both.
    'Fix the policy file (its format is in docs/formats.md), or put back the committed one with `git restore --source=HEAD --staged --worktree .delegate-git/policy.json` (where HEAD holds a broken one too, name an earlier commit that `git log -- .delegate-git/policy.json` lists, and commit the result).',
  );
  return { ...policy, keysDir: canonicalDir(policy.keysDir) };
}

export function policyText(policy: Policy): string {
  return `${JSON.stringify(policy, null, 2)}\n`;
}

export const GOVERNANCE_DELETED =
  'the policy file and the trust root cannot be deleted (to retire a key, revoke it: `delegate-git keys revoke`)';

export const PROTECTED_DELETION = 'the policy protects deletions of this path (protectDeletes)';

/**
 * What a refused path needs, which decides the advice a gate gives, never whether it refuses: content is promoted by a
 * record or by approvals; no record promotes a submodule; a protected deletion waits for a rules change in force; the
 * policy and key files are never deleted. Where a refusal carries no kind, it is content.
 */
export type RefusalKind = 'content' | 'submodule' | 'protected deletion' | 'governance deletion';

export interface DeletionRefusal {
  reason: string;
  kind: Extract<RefusalKind, 'protected deletion' | 'governance deletion'>;
}

export const GOVERNANCE_DELETION = { reason: GOVERNANCE_DELETED, kind: 'governance deletion' } as const;

/**
 * Why deleting a governed path is refused, or null when the deletion is only reported. The governance files can
 * never be deleted: an approval cannot be recorded on content that no longer exists (retire a key by revoking it).
 */
export function deletionRefusal(
  policy: Policy,
  path: string,
  matcher: GovernedMatcher = governedMatcher(policy),
  link = false,
): DeletionRefusal | null {
  if (isGovernanceFile(policy, path)) return GOVERNANCE_DELETION;
  if (policy.protectDeletes && matcher.isProtected(path, link))
    return { reason: PROTECTED_DELETION, kind: 'protected deletion' };
  return null;
}
