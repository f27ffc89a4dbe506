/**
 * Reviewers for end-to-end stories, added the way a team adds them: `delegate-git keygen <name>` (the private key in
 * the story's XDG_CONFIG_HOME, beside the operator's), `delegate-git keys add <name> ...` (the key file in the work
 * tree), an approval of that key file by reviewers already trusted (`attest --approve --key <them>`), and a commit
 * through the pre-commit hook. Several reviewers are several key names in one XDG dir, so every `attest` here names
 * its key (with two keys there, an unnamed one is ambiguous).
 *
 * Typical use:
 *   const story = makeStory();
 *   const dir = makeWorkTree(story, 'work');
 *   adopt(story, dir, ['src/**']);                                  // alice: delegator + reviewer
 *   addKeys(story, dir, [{ name: 'bob' }]);                         // bob: reviewer, approved by alice
 *   writeFiles(dir, { 'src/a.ts': 'export {}\n' });
 *   attestOk(story, dir, 'approve', ['src/a.ts'], { key: 'bob' });
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  DEFAULT_KEYS_DIR,
  POLICY_PATH,
  type Policy,
  parsePolicy,
  policyText,
  type Role,
} from '../../packages/core/src/index.js';
import { cli, cliOk, commit, gitOk, OPERATOR, type Run, refTip, type Story } from './cli-story.js';

export const LEDGER_REF = 'refs/notes/delegations';

export interface KeySpec {
  name: string;
  /** Default: reviewer only. */
  roles?: Role[];
  /** Default: `<name>@example.com`. */
  email?: string;
  /** RFC 3339 UTC validity window, as `keys add --not-before/--not-after` take it. */
  notBefore?: string;
  notAfter?: string;
}

export interface AddedKey {
  name: string;
  email: string;
  publicKey: string;
  keyid: string;
  /** Repository-relative path of its key file. */
  keyFile: string;
}

export interface AttestOptions {
  /** The signing key's name; default the operator's. */
  key?: string;
  message?: string;
  /** Review the staged content of every staged governed file instead of named paths. */
  staged?: boolean;
  json?: boolean;
  env?: NodeJS.ProcessEnv;
}

/** The key file a key name gets in the default keys directory. */
export function keyFileOf(name: string, keysDir = DEFAULT_KEYS_DIR): string {
  return `${keysDir}/${name}.json`;
}

/** `delegate-git attest --approve|--reject ... --yes` (never throws: the run is what tests assert). */
export function attest(
  story: Story,
  dir: string,
  decision: 'approve' | 'reject',
  paths: readonly string[],
  opts: AttestOptions = {},
): Run {
  const args = [
    'attest',
    `--${decision}`,
    ...(opts.staged ? ['--staged'] : paths),
    '--key',
    opts.key ?? OPERATOR,
    '--yes',
  ];
  if (opts.message !== undefined) args.push('-m', opts.message);
  if (opts.json) args.push('--json');
  return cli(story, dir, args, opts.env ?? story.env);
}

/** attest, failing the test with the command's output unless it exits 0. */
export function attestOk(
  story: Story,
  dir: string,
  decision: 'approve' | 'reject',
  paths: readonly string[],
  opts: AttestOptions = {},
): Run {
  const run = attest(story, dir, decision, paths, opts);
  if (run.code !== 0) {
    throw new Error(
      `attest --${decision} ${paths.join(' ')} --key ${opts.key ?? OPERATOR} exited ${run.code}:\n${run.stdout}${run.stderr}`,
    );
  }
  return run;
}

/** Each key in `keys` approves the work-tree content of `paths`. */
export function approveBy(
  story: Story,
  dir: string,
  paths: readonly string[],
  keys: readonly string[],
): void {
  for (const key of keys) attestOk(story, dir, 'approve', paths, { key });
}

/**
 * Approves the work-tree content of `files` by each of `approvers`, stages them and commits through the hook.
 * A refused commit fails the test with the hook's output.
 */
export function commitApproved(
  story: Story,
  dir: string,
  files: readonly string[],
  approvers: readonly string[],
  message: string,
): void {
  approveBy(story, dir, files, approvers);
  gitOk(story, dir, ['add', '--', ...files]);
  const run = commit(story, dir, message);
  if (run.code !== 0) throw new Error(`commit "${message}" was refused:\n${run.stderr}`);
}

/** `delegate-git keygen <name>` in the story's XDG_CONFIG_HOME; returns the public half. */
export function generateKey(story: Story, dir: string, name: string): { publicKey: string; keyid: string } {
  const run = cliOk(story, dir, ['keygen', name, '--json']);
  const { publicKey, keyid } = JSON.parse(run.stdout) as { publicKey: string; keyid: string };
  return { publicKey, keyid };
}

/** keygen + `keys add` for each spec: the key files are written in the work tree, nothing staged or approved. */
export function registerKeys(story: Story, dir: string, specs: readonly KeySpec[]): AddedKey[] {
  return specs.map((spec) => {
    const { publicKey, keyid } = generateKey(story, dir, spec.name);
    const email = spec.email ?? `${spec.name}@example.com`;
    const roles = (spec.roles ?? ['reviewer']).join(',');
    const args = ['keys', 'add', spec.name, '--public-key', publicKey, '--roles', roles, '--email', email];
    if (spec.notBefore) args.push('--not-before', spec.notBefore);
    if (spec.notAfter) args.push('--not-after', spec.notAfter);
    cliOk(story, dir, args);
    return { name: spec.name, email, publicKey, keyid, keyFile: keyFileOf(spec.name, keysDirOf(dir)) };
  });
}

/**
 * Adds keys to the trust root properly: registers them, has `approvers` (reviewers already trusted; default the
 * operator) approve the new key files, and commits them through the pre-commit hook.
 */
export function addKeys(
  story: Story,
  dir: string,
  specs: readonly KeySpec[],
  approvers: readonly string[] = [OPERATOR],
): AddedKey[] {
  const added = registerKeys(story, dir, specs);
  commitApproved(
    story,
    dir,
    added.map((k) => k.keyFile),
    approvers,
    `Trust ${added.map((k) => k.name).join(', ')}`,
  );
  return added;
}

/** `keys revoke <name>`, approved by `approvers` and committed through the hook. */
export function revokeKey(
  story: Story,
  dir: string,
  name: string,
  approvers: readonly string[] = [OPERATOR],
): void {
  cliOk(story, dir, ['keys', 'revoke', name]);
  commitApproved(story, dir, [keyFileOf(name, keysDirOf(dir))], approvers, `Revoke ${name}`);
}

/** Rewrites the work tree's policy file (nothing staged or approved). */
export function editPolicy(dir: string, change: (policy: Policy) => void): void {
  const file = path.join(dir, POLICY_PATH);
  const policy = parsePolicy(fs.readFileSync(file, 'utf8'));
  change(policy);
  fs.writeFileSync(file, policyText(policy));
}

/** The ledger's tip in `dir` (null before the first record). */
export function ledgerTip(story: Story, dir: string): string | null {
  return refTip(story, dir, LEDGER_REF);
}

function keysDirOf(dir: string): string {
  return parsePolicy(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8')).keysDir;
}
