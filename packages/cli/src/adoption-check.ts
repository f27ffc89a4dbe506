/**
 * A repository adopts once: where a branch already holds a policy, a new one written by `init` (on a branch from
 * before the adoption, or in a clone that has not fetched it yet) would be a trust anchor of its own, which verify
 * and the server refuse, and its anchor records would name another repository id in the shared ledger, so that the
 * ledger could not be pushed.
 */
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { DelegateGitError, gitTry, holdsKey, POLICY_PATH, parsePolicy, shownPath } from '@delegate-git/core';
import type { Io } from './command.js';
import { firstLine, listRemote } from './remote-listing.js';

type GitOptions = { cwd: string; env: NodeJS.ProcessEnv };

/** Throws when any branch, here or on a remote, holds the policy; when that cannot be told, fails closed. */
export async function refuseSecondAdoption(top: string, io: Io): Promise<void> {
  const opts = { cwd: top, env: { ...io.env, GIT_TERMINAL_PROMPT: '0' } };
  const remoteTips = await tipsOfRemotes(opts, io);
  const found = await gitTry(
    ['rev-list', '-1', '--all', ...remoteTips, '--', `:(literal)${POLICY_PATH}`],
    opts,
  );
  if (found.code !== 0) {
    throw new DelegateGitError(
      'GIT',
      `Could not tell whether a branch holds ${POLICY_PATH} already: git rev-list --all failed ` +
        `(${firstLine(found.stderr)}). init adopts only where none does; repair the refs git names ` +
        '(git fsck, or delete a ref that points at a missing object) and run init again.',
    );
  }
  const adopted = found.stdout.toString().trim();
  if (!adopted) return;
  const holder = await holderOf(adopted, opts);
  const keys = await keysAt(adopted, opts);
  throw new DelegateGitError(
    'USAGE',
    `This repository has adopted delegate-git already: ${holder} holds ${POLICY_PATH}, which trusts the keys ` +
      `${keys.length > 0 ? keys.join(', ') : '(none readable)'}; this branch has no policy, and a second adoption ` +
      'would be a trust anchor of its own, which verify and the server refuse. If you trust those keys, merge that ' +
      `branch into this one (git merge ${holder}): they become this branch's trust anchor. If you do not (anyone ` +
      'who can push a branch can write one), delete that branch, here and on the remote, and run init again.',
  );
}

/**
 * Throws when another worktree of this repository holds a policy no branch holds (an adoption in progress there): the
 * worktrees share one ledger, and a policy written here would carry a repository id of its own, whose anchor
 * approvals the ledger keeps for good beside the other's (init's lock makes two inits take turns, not agree).
 */
export async function refuseAdoptionInAnotherWorktree(top: string, io: Io): Promise<void> {
  const listed = await gitTry(['worktree', 'list', '--porcelain'], { cwd: top, env: io.env });
  if (listed.code !== 0) return; // a git without worktrees: there is no other one
  const here = realpathSync(top);
  for (const line of listed.stdout.toString('utf8').split('\n')) {
    if (!line.startsWith('worktree ')) continue;
    const dir = line.slice('worktree '.length);
    if (!existsSync(path.join(dir, POLICY_PATH)) || realpathSync(dir) === here) continue;
    throw new DelegateGitError(
      'USAGE',
      `An adoption is in progress in another worktree of this repository: ${shownPath(dir)} holds ${POLICY_PATH}, ` +
        'which no branch holds yet. The worktrees share one ledger, and a second policy here would be a trust anchor ' +
        'with a repository id of its own. Finish the adoption there (commit it), then merge that branch here and run ' +
        'init again; if that adoption was abandoned, remove its policy file first.',
    );
  }
}

/**
 * The tips of every branch and tag of each remote, by `git ls-remote`: a clone that has not fetched since another
 * teammate adopted must not adopt again. A tip this clone does not hold is fetched first, or init refuses; a remote
 * that cannot be reached is named in a warning (init still adopts: it may be a first adoption made offline).
 */
async function tipsOfRemotes(opts: GitOptions, io: Io): Promise<string[]> {
  const remotes = (await gitTry(['remote'], opts)).stdout.toString().split('\n').filter(Boolean);
  const tips: string[] = [];
  for (const remote of remotes) {
    const listed = await listRemote(remote, ['--heads', '--tags'], [], opts);
    if (listed.code !== 0) {
      io.err(
        `delegate-git: could not reach ${remote} to see whether it adopted delegate-git already ` +
          `(${listed.stderr}); if it has, fetch it and run init on its branch instead.\n`,
      );
      continue;
    }
    const refs = listed.stdout
      .toString()
      .split('\n')
      .filter((line) => line && !line.endsWith('^{}'))
      .map((line) => ({ id: line.slice(0, line.indexOf('\t')), ref: line.slice(line.indexOf('\t') + 1) }));
    const held = await gitTry(['cat-file', '--batch-check=%(objecttype)'], {
      ...opts,
      input: refs.map(({ id }) => `${id}\n`).join(''),
    });
    const types = held.stdout.toString().split('\n');
    const missing = refs.filter((_, i) => types[i] === undefined || types[i]!.endsWith(' missing'));
    if (held.code !== 0 || missing.length > 0) {
      const names = missing.map(({ ref }) => ref.replace(/^refs\/(heads|tags)\//, ''));
      throw new DelegateGitError(
        'USAGE',
        `${remote} has commits this clone has not fetched (${names.join(', ') || 'unreadable'}), so init cannot ` +
          `tell whether the repository adopted delegate-git already. Fetch them (git fetch ${remote} ` +
          `${names.slice(0, 3).join(' ')}${names.length > 3 ? ' ...' : ''}) and run init again.`,
      );
    }
    // An annotated tag is followed to what it tags (rev-list peels it).
    tips.push(...refs.filter((_, i) => types[i] === 'commit' || types[i] === 'tag').map(({ id }) => id));
  }
  return tips;
}

/** A branch (or tag) holding `commit`, as the user names it; else the commit itself. */
async function holderOf(commit: string, opts: GitOptions): Promise<string> {
  for (const args of [
    ['branch', '-a', '--contains', commit, '--format=%(refname:short)'],
    ['tag', '--contains', commit],
  ]) {
    // origin/HEAD names another branch listed too.
    const names = (await gitTry(args, opts)).stdout
      .toString()
      .split('\n')
      .filter((name) => name && !name.endsWith('/HEAD'));
    if (names.length > 0) return names[0]!;
  }
  return commit.slice(0, 12);
}

/** The names of the key files the policy at `commit` trusts (its keys directory there). */
async function keysAt(commit: string, opts: GitOptions): Promise<string[]> {
  const policy = await gitTry(['cat-file', 'blob', `${commit}:${POLICY_PATH}`], opts);
  let keysDir: string;
  try {
    keysDir = parsePolicy(policy.stdout.toString('utf8')).keysDir;
  } catch {
    return [];
  }
  const listed = await gitTry(
    ['ls-tree', '-r', '-z', '--name-only', commit, '--', `:(literal)${keysDir}/`],
    opts,
  );
  return listed.stdout
    .toString('utf8')
    .split('\0')
    .filter((p) => p && holdsKey(p))
    .map(shownPath);
}
