/**
 * The committed policy (DESIGN 3.5) and the pure question "is this path governed?".
 */
import picomatch from 'picomatch';
import * as z from 'zod/mini';
import { parseWithSchema } from './schema.js';

export const POLICY_PATH = '.delegate-git/policy.json';
export const DEFAULT_KEYS_DIR = '.delegate-git/keys';

const relativeDir = z.string().check(
  z.minLength(1),
  z.refine(
    (s) => !s.startsWith('/') && !s.split('/').includes('..') && !s.includes('\\'),
    'must be a repository-relative POSIX path without ..',
  ),
);

const policySchema = z.strictObject({
  version: z.literal(1),
  repositoryId: z.string().check(z.regex(/^[A-Za-z0-9-]{8,64}$/, 'must be 8-64 letters, digits or dashes')),
  keysDir: z._default(relativeDir, DEFAULT_KEYS_DIR),
  protect: z._default(z.array(z.string().check(z.minLength(1))), []),
  exclude: z._default(z.array(z.string().check(z.minLength(1))), []),
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
    'Fix the policy file (its format is in docs/formats.md), or restore it with `git checkout -- .delegate-git/policy.json`.',
  );
  return { ...policy, keysDir: policy.keysDir.replace(/\/+$/, '') };
}

export function policyText(policy: Policy): string {
  return `${JSON.stringify(policy, null, 2)}\n`;
}

/** The policy file and the keys directory: always governed, whatever `exclude` says. */
export function isGovernanceFile(policy: Policy, path: string): boolean {
  return path === POLICY_PATH || path.startsWith(`${policy.keysDir}/`);
}

export interface GovernedMatcher {
  (path: string, everRecorded: boolean): boolean;
  isProtected(path: string): boolean;
}

/**
 * Governed = protect globs + paths the ledger has ever recorded, minus exclude; the governance files always.
 * Built once per run: picomatch compiles the globs to one regular expression each.
 */
export function governedMatcher(policy: Policy): GovernedMatcher {
  const opts = { dot: true };
  const protect = policy.protect.length > 0 ? picomatch(policy.protect, opts) : () => false;
  const exclude = policy.exclude.length > 0 ? picomatch(policy.exclude, opts) : () => false;
  const isProtected = (path: string) => isGovernanceFile(policy, path) || (protect(path) && !exclude(path));
  const governed = (path: string, everRecorded: boolean) =>
    isGovernanceFile(policy, path) || ((everRecorded || protect(path)) && !exclude(path));
  return Object.assign(governed, { isProtected });
}

/**
 * Why deleting a governed path is refused, or null when the deletion is only reported. The governance files can
 * never be deleted: an approval cannot be recorded on content that no longer exists (retire a key by revoking it).
 */
export function deletionRefusal(
  policy: Policy,
  path: string,
  matcher: GovernedMatcher = governedMatcher(policy),
): string | null {
  if (isGovernanceFile(policy, path)) {
    return 'the policy file and the trust root cannot be deleted (to retire a key, revoke it: `delegate-git keys revoke`)';
  }
  if (policy.protectDeletes && matcher.isProtected(path))
    return 'the policy protects deletions of this path (protectDeletes)';
  return null;
}
