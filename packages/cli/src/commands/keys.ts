import path from 'node:path';
import {
  DelegateGitError,
  defaultBranchRules,
  holderOf,
  keyFileText,
  POLICY_PATH,
  type Policy,
  parseKeyFile,
  parseRfc3339Utc,
  Repository,
  type Role,
  type TrustedKey,
} from '@delegate-git/core';
import { shownText } from '@delegate-git/core/shown-path';
import { checkoutSnapshot, type Snapshot, worktreeSnapshot } from '@delegate-git/core/snapshot';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { writeFileAtomic } from '../fs.js';
import { readKeyFiles, readPolicyIn, registerKey } from '../trust-files.js';

const help = `
Usage: delegate-git keys list [--json]
       delegate-git keys add <name> --public-key <base64> --roles delegator,reviewer [--email <e>]
                             [--not-before <time>] [--not-after <time>] [--json]
       delegate-git keys revoke <name> [--at <time>] [--force] [--json]

Edits the trust root: one JSON file per key in the repository's keys directory (the policy's keysDir).
list shows under each key who approved its file as it is, as every gate judges it (--json: approvedBy).
Roles: delegator (signs verdicts), reviewer (signs reviews). Times are RFC 3339 UTC. While a key is revoked,
none of its records counts, whatever its date (taking a revocation back is a change like any other, approved
after it); a key revoked on origin's default branch counts on no branch. Changes to the keys directory are
governed: commit them with a reviewer's approval. A key file keeps its key: to rotate a key, add the new key
under another name, have it approved and committed, then revoke the old one (every gate refuses another key
written into an existing file). revoke refuses to leave fewer reviewers than reviewThreshold: no later
change to the keys or the policy could be approved, so every gate would refuse from then on; --force revokes
anyway (a key that is compromised), and the repository then needs its rules set again by hand
(docs/server.md, "A lost key"); it warns when it leaves exactly as many, one lost key from that state.
Reviewers are told apart by --email: keys with one email (any letter case) count as one reviewer toward
reviewThreshold, so a rotation's overlap does not count twice; a key with no email is a reviewer of its own.

Example:
  delegate-git keys add bob --public-key q83v...= --roles reviewer --email bob@example.com
  delegate-git keys revoke alice
`;

const ROLES: readonly Role[] = ['delegator', 'reviewer'];

export default {
  summary: 'list, add or revoke trusted public keys (the trust root)',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const [sub, ...rest] = argv;
    const repo = await Repository.open(io.cwd, io.env, io.err);
    try {
      const top = repo.layout.topLevel;
      if (top === null)
        throw new DelegateGitError('USAGE', 'Run `delegate-git keys` in a clone with a work tree.');
      // A sparse checkout may leave the policy and keys out of the work tree: the index holds this checkout's.
      const checkout = checkoutSnapshot(top, repo.layout.gitDir, repo.objects, repo.env);
      const policy = await readPolicyIn(checkout);
      if (sub === 'list') return await list(rest, io, { repo, top, checkout, keysDir: policy.keysDir });
      if (sub !== 'add' && sub !== 'revoke')
        throw usageError('keys', `Unknown subcommand "${sub ?? ''}": use list, add or revoke.`);
      await refuseLeftOut(sub, top, checkout, policy.keysDir);
      return sub === 'add' ? await add(rest, io, top, policy) : await revoke(rest, io, top, policy);
    } finally {
      await repo.close();
    }
  },
} satisfies CommandModule;

/**
 * `keys add` and `keys revoke` edit the work tree's key files: where a sparse checkout leaves the policy or any key
 * out, a file written there would not be staged (`git add` refuses paths outside the sparse checkout), and a key left
 * out would be missed by the checks against the keys already trusted.
 */
async function refuseLeftOut(sub: string, top: string, checkout: Snapshot, keysDir: string): Promise<void> {
  const worktree = worktreeSnapshot(top);
  const [here, held, policyHere] = await Promise.all([
    worktree.listFiles(keysDir),
    checkout.listFiles(keysDir),
    worktree.readFile(POLICY_PATH).then((text) => text !== null),
  ]);
  if (policyHere && here.length === held.length) return;
  const policyDir = path.posix.dirname(POLICY_PATH);
  const dirs = keysDir.startsWith(`${policyDir}/`) ? policyDir : `${policyDir} ${keysDir}`;
  throw new DelegateGitError(
    'USAGE',
    `This sparse checkout leaves ${policyHere ? `key files in ${keysDir}` : POLICY_PATH} out of the work tree, and ` +
      `\`keys ${sub}\` edits the trust root there, so nothing was changed. Add them to the checkout (\`git ` +
      `sparse-checkout add ${dirs}\`), then run it again.`,
  );
}

async function list(
  argv: string[],
  io: Io,
  where: { repo: Repository; top: string; checkout: Snapshot; keysDir: string },
): Promise<number> {
  const { values } = parseCommandArgs('keys', argv, { json: { type: 'boolean' } }, false);
  const keys = await readKeyFiles(where.checkout, where.keysDir);
  // Who approved each key file as it is, as every gate judges it (a06): a key is trusted on their word.
  const approvals = await keyApprovals(
    where.repo,
    where.top,
    keys.map((k) => k.file),
  );
  // A key revoked on origin's default branch counts here for nothing either, though its file here says nothing of it.
  const head = (await where.repo.objects.read('HEAD^{commit}'))?.oid ?? null;
  const defaultBranch = await defaultBranchRules(where.repo, head);
  const revokedThere = (k: { keyid: string; raw: { revoked?: string } }) => {
    const at = k.raw.revoked ? undefined : defaultBranch.revoked.get(k.keyid);
    return at === undefined ? null : new Date(at).toISOString();
  };
  if (values.json) {
    io.out(
      json({
        keys: keys.map((k) => ({
          ...k.raw,
          file: k.file,
          approvedBy: approvals.get(k.file)?.by ?? null,
          ...(revokedThere(k) ? { revokedOnDefaultBranch: revokedThere(k) } : {}),
        })),
      }),
    );
    return 0;
  }
  if (keys.length === 0) io.out(`No keys in ${where.keysDir}.\n`);
  for (const k of keys) {
    const there = revokedThere(k);
    const status = k.raw.revoked
      ? `REVOKED ${k.raw.revoked}`
      : there
        ? `REVOKED ${there} on origin's default branch (${defaultBranch.source})`
        : 'active';
    const window = [
      k.raw.notBefore && `from ${k.raw.notBefore}`,
      k.raw.notAfter && `until ${k.raw.notAfter}`,
    ].filter(Boolean);
    io.out(
      `${k.name.padEnd(16)} ${k.keyid.slice(0, 16)}  ${[...k.roles].sort().join(',').padEnd(18)} ${status}${window.length ? ` (${window.join(' ')})` : ''}${k.email ? `  <${k.email}>` : ''}\n`,
    );
    const approval = approvals.get(k.file);
    if (approval)
      io.out(
        approval.by
          ? `    approved by ${shownText(approval.by.join(', '))}\n`
          : `    not approved as it is: ${shownText(approval.reason)}\n`,
      );
  }
  return 0;
}

/** Per key file the work tree holds: who approved it as it is (null: nobody yet), and why not. */
async function keyApprovals(
  repo: Repository,
  top: string,
  files: string[],
): Promise<Map<string, { by: string[] | null; reason: string }>> {
  const { checkWorktreePaths } = await import('@delegate-git/core/checks');
  const report = await checkWorktreePaths(repo, top, files);
  return new Map(
    report.results
      .filter((r) => !r.absent)
      .map((r) => [r.path, { by: r.promoted ? r.by : null, reason: r.reason }] as const),
  );
}

async function add(argv: string[], io: Io, top: string, policy: Policy): Promise<number> {
  const { keysDir } = policy;
  const { values, positionals } = parseCommandArgs('keys', argv, {
    'public-key': { type: 'string' },
    roles: { type: 'string' },
    email: { type: 'string' },
    'not-before': { type: 'string' },
    'not-after': { type: 'string' },
    json: { type: 'boolean' },
  });
  const [name, ...extra] = positionals;
  if (!name || extra.length > 0) throw usageError('keys', 'keys add takes exactly one key name.');
  if (!values['public-key']) throw usageError('keys', 'keys add needs --public-key <base64>.');
  const roles = (values.roles ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  if (roles.length === 0 || roles.some((r) => !ROLES.includes(r as Role))) {
    throw usageError('keys', `--roles must list delegator and/or reviewer (got "${values.roles ?? ''}").`);
  }
  const notBefore = timeOption('not-before', values['not-before']);
  const notAfter = timeOption('not-after', values['not-after']);
  if (notBefore && notAfter && parseRfc3339Utc(notBefore)! >= parseRfc3339Utc(notAfter)!)
    throw usageError(
      'keys',
      `--not-before (${notBefore}) must come before --not-after (${notAfter}): the key would never be valid.`,
    );
  const asked = {
    name,
    email: values.email ?? '',
    publicKey: values['public-key'],
    roles: roles as Role[],
    notBefore,
    notAfter,
  };
  const result = await registerKey(top, keysDir, asked);
  // One key is trusted once: registered under another name, nothing asked for was done.
  if (!result.created && path.posix.basename(result.file) !== `${name}.json`)
    throw new DelegateGitError(
      'USAGE',
      `That key is already registered in ${result.file}, so no key file named ${name} was written (a key is trusted ` +
        "under one name). Use that name, or rename the file with a reviewer's approval.",
    );
  const keyFiles = await readKeyFiles(worktreeSnapshot(top), keysDir);
  if (!result.created) refuseChangeOf(result.file, keyFiles, asked);
  const sharing = sameHolder(keyFiles, result.file);
  if (values.json) io.out(json({ name, ...result, ...(sharing.length > 0 && { sameHolderAs: sharing }) }));
  else
    io.out(
      result.created
        ? `Added ${result.file}. Commit it with ${approvalsAsked(policy.reviewThreshold)}.\n`
        : `That key is already registered in ${result.file}.\n`,
    );
  if (sharing.length > 0 && !values.json)
    io.err(
      `note: ${sharing.join(', ')} ${sharing.length === 1 ? 'has' : 'have'} the same email: their approvals and this key's count as one reviewer's toward reviewThreshold. Once the new key is in use, revoke the old one (delegate-git keys revoke <name>).\n`,
    );
  return 0;
}

/** The names of the other keys, not revoked, of the same holder as the key in `file` (one reviewer with it). */
function sameHolder(keyFiles: readonly TrustedKey[], file: string): string[] {
  const added = keyFiles.find((k) => k.file === file);
  if (!added) return [];
  return keyFiles
    .filter((k) => k !== added && k.revoked === undefined && holderOf(k) === holderOf(added))
    .map((k) => k.name)
    .sort();
}

/** `keys add` of a registered key writes nothing: asked for other roles, email or validity, it says so and fails. */
function refuseChangeOf(
  file: string,
  keys: Awaited<ReturnType<typeof readKeyFiles>>,
  asked: { email: string; roles: Role[]; notBefore?: string; notAfter?: string },
): void {
  const raw = keys.find((k) => k.file === file)?.raw;
  if (!raw) return;
  const differs = [
    [...new Set(asked.roles)].sort().join(',') !== [...raw.roles].sort().join(',') && 'roles',
    asked.email !== '' && asked.email !== raw.email && 'email',
    asked.notBefore !== undefined && asked.notBefore !== raw.notBefore && 'notBefore',
    asked.notAfter !== undefined && asked.notAfter !== raw.notAfter && 'notAfter',
  ].filter(Boolean);
  if (differs.length === 0) return;
  throw new DelegateGitError(
    'USAGE',
    `That key is already registered in ${file}, with another ${differs.join(', ')}; keys add changed nothing. A key ` +
      "file is changed by editing it, with reviewers' approval (`delegate-git attest --approve <file>`).",
  );
}

/** A time given on the command line, refused as the option it came from (not as the key file it would go into). */
function timeOption(option: string, value: string | undefined): string | undefined {
  if (value !== undefined && parseRfc3339Utc(value) === null)
    throw usageError(
      'keys',
      `--${option} must be an RFC 3339 UTC time like 2026-01-31T12:00:00Z (got "${value}").`,
    );
  return value;
}

async function revoke(argv: string[], io: Io, top: string, policy: Policy): Promise<number> {
  const { values, positionals } = parseCommandArgs('keys', argv, {
    at: { type: 'string' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const [name, ...extra] = positionals;
  if (!name || extra.length > 0) throw usageError('keys', 'keys revoke takes exactly one key name.');
  const keys = await readKeyFiles(worktreeSnapshot(top), policy.keysDir);
  const key = keys.find((k) => k.name === name);
  if (!key)
    throw new DelegateGitError(
      'USAGE',
      `No key named "${name}" in ${policy.keysDir}. See \`delegate-git keys list\`.`,
    );
  const at = timeOption('at', values.at) ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const left = reviewersLeft(keys, key, Date.now());
  if (left !== null && left < policy.reviewThreshold && !values.force)
    throw new DelegateGitError(
      'USAGE',
      `Revoking ${name} would leave ${left} reviewer(s), and a change of the keys or the policy needs ${policy.reviewThreshold} approval(s): none could ever be approved again, so every gate would refuse from the commit of this revocation on. Nothing was changed. Add the new key first (\`delegate-git keys add <name> --public-key <base64> --roles reviewer\`), have ${name} approve it (\`delegate-git attest --approve <its file>\`) and commit it, then revoke ${name}. If ${name}'s key is lost, none of this can be approved: docs/server.md, "A lost key", says what is left. If ${name}'s key is compromised and must go now, run again with --force; the repository's rules must then be set again by hand (the same section).`,
    );
  const updated = { ...key.raw, revoked: key.raw.revoked ?? at };
  parseKeyFile(keyFileText(updated), key.file);
  await writeFileAtomic(path.join(top, key.file), keyFileText(updated));
  // One lost key from a repository whose keys and policy no approval can change (admin audit a02): said while a
  // reviewer can still be added.
  if (left !== null && left === policy.reviewThreshold)
    io.err(
      `delegate-git keys: warning: ${left} reviewer(s) are left, as many as reviewThreshold asks: should one more reviewer key be lost, no change of the keys or the policy could be approved again (docs/server.md, "A lost key"). Add a reviewer while you can.\n`,
    );
  if (values.json) io.out(json({ name, file: key.file, keyid: key.keyid, revoked: updated.revoked }));
  else
    io.out(
      `Revoked ${name} (${updated.revoked}) in ${key.file}. Its records no longer count; content it promoted must be promoted again.\n`,
    );
  return 0;
}

/**
 * How many reviewers (distinct holders, holderOf) would remain active without `revoking`; null when it is no active
 * reviewer, so revoking it takes none away.
 */
export function reviewersLeft(keys: readonly TrustedKey[], revoking: TrustedKey, now: number): number | null {
  const active = (k: TrustedKey) =>
    k.roles.has('reviewer') && k.revoked === undefined && (k.notAfter === undefined || k.notAfter > now);
  if (!active(revoking)) return null;
  return new Set(keys.filter((k) => k !== revoking && active(k)).map(holderOf)).size;
}

/** What a change of the keys needs, in words: "a reviewer's approval", or "2 reviewers' approvals". */
function approvalsAsked(threshold: number): string {
  return threshold === 1 ? "a reviewer's approval" : `${threshold} reviewers' approvals`;
}
