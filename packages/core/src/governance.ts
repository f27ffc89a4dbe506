/**
 * Policy and trust root as they stand in one snapshot: the rules that judge that snapshot.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { DelegateGitError } from './errors.js';
import { POLICY_PATH, type Policy, parsePolicy } from './policy.js';
import type { Snapshot } from './snapshot.js';
import { type KeyFile, keyFileText, parseTrustRoot, TrustRoot } from './trust-root.js';

export interface Governance {
  policy: Policy;
  trustRoot: TrustRoot;
  /** Where they were read from, for messages. */
  source: string;
}

/** The policy alone: enough to tell what is governed, which is all a commit touching nothing governed needs. */
export async function loadPolicy(snapshot: Snapshot): Promise<Policy> {
  const text = await snapshot.readFile(POLICY_PATH);
  if (text === null) {
    // Between init and the commit that adopts: the rules are written but not staged, and running init again keeps them.
    if (snapshot.stagedFrom !== undefined && existsSync(path.join(snapshot.stagedFrom, POLICY_PATH)))
      throw new DelegateGitError(
        'POLICY',
        `${POLICY_PATH} is in the work tree but not staged, so this commit has no rules to be judged by: commit the adoption first (\`git add .delegate-git && git commit -m "Adopt delegate-git"\`), or stage it with this commit.`,
      );
    throw new DelegateGitError(
      'POLICY',
      `There is no ${POLICY_PATH} in ${snapshot.label}, so nothing says what is governed. ` +
        'Run `delegate-git init` in this repository (and commit the policy and keys it writes).',
    );
  }
  return parsePolicy(text.toString('utf8'), `${POLICY_PATH} (${snapshot.label})`);
}

/**
 * Whether a file in the keys directory (at any depth) is loaded as a key: its name ends in `.json`, as written
 * (other files there, a README say, are governed but hold no key).
 */
export function holdsKey(path: string): boolean {
  return path.endsWith('.json');
}

export async function loadGovernance(snapshot: Snapshot, knownPolicy?: Policy): Promise<Governance> {
  const policy = knownPolicy ?? (await loadPolicy(snapshot));
  const keyPaths = (await snapshot.listFiles(policy.keysDir)).filter(holdsKey);
  const files = await Promise.all(
    keyPaths.map(async (p) => {
      const content = await snapshot.readFile(p);
      // Listed but gone: the index or tree changed under a long-running reader. Never judged as an empty key.
      if (content === null)
        throw new DelegateGitError(
          'TRUST_ROOT',
          `The key file ${p} is listed in ${snapshot.label} but could not be read (did it change meanwhile?). Run the command again.`,
        );
      return { path: p, text: content.toString('utf8') };
    }),
  );
  const trustRoot = parseTrustRoot(files);
  if (trustRoot.keys.length === 0) {
    throw new DelegateGitError(
      'TRUST_ROOT',
      `The keys directory ${policy.keysDir} in ${snapshot.label} holds no key, so no record can be trusted. ` +
        'Add one with `delegate-git keygen <name>` or `delegate-git keys add`.',
    );
  }
  return { policy, trustRoot, source: snapshot.label };
}

/**
 * `own` with every key that `binding`'s trust root (the default branch's) revokes revoked there too, where `own` lists
 * it unrevoked. A revocation stops a key's records counting on every branch: judged by its own keys, a branch made
 * before the revocation would keep a departed or stolen key's approvals promoting there for good (admin audit a01).
 * Only revocations carry over: a key the default branch removed, or whose roles it changed, stays as the branch lists
 * it. The same object when nothing changes, so caches keyed by the trust root keep their entries.
 */
export function withRevocationsOf(own: Governance, binding: Governance): Governance {
  const revokedElsewhere = new Set(own.trustRoot.revokedElsewhere);
  const sources = own.trustRoot.sources.map((source) => {
    const key = own.trustRoot.keys.find((k) => k.file === source.path);
    const revoked =
      key?.revoked === undefined ? binding.trustRoot.byKeyid(key?.keyid ?? '')?.revoked : undefined;
    if (key === undefined || revoked === undefined) return source;
    revokedElsewhere.add(key.keyid);
    const file = JSON.parse(source.text) as KeyFile;
    return { path: source.path, text: keyFileText({ ...file, revoked: new Date(revoked).toISOString() }) };
  });
  if (revokedElsewhere.size === own.trustRoot.revokedElsewhere.size) return own;
  const root = parseTrustRoot(sources);
  return {
    policy: own.policy,
    trustRoot: new TrustRoot(root.keys, root.digest, root.sources, revokedElsewhere),
    source: `${own.source}, with the revocations of ${binding.source}`,
  };
}

/**
 * A reason as said where `trustRoot` revokes keys by another trust root's revocation: "signer bob's key was revoked"
 * names where (red team r06), since the key file here says nothing of it.
 */
export function revokedWhere(reason: string, trustRoot: TrustRoot, where: string): string {
  let said = reason;
  for (const key of trustRoot.keys)
    if (trustRoot.revokedElsewhere.has(key.keyid))
      said = said.replaceAll(
        `signer ${key.name}'s key was revoked`,
        `signer ${key.name}'s key was revoked ${where}`,
      );
  return said;
}
