import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, realpath, rm } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import {
  checkoutSnapshot,
  DEFAULT_KEYS_DIR,
  DelegateGitError,
  decodeBase64Strict,
  decodeRecord,
  generateSigningKey,
  git,
  gitText,
  gitTry,
  governedMatcher,
  IN_TOTO_PAYLOAD_TYPE,
  isGovernanceFile,
  LEDGER_REF,
  listSigningKeys,
  loadSigningKey,
  POLICY_PATH,
  type Policy,
  pae,
  parsePolicy,
  policyText,
  Repository,
  recordStatement,
  reviewStatement,
  rfc3339,
  type SigningKey,
  saveSigningKey,
  shellQuote,
  shownPath,
  splitZ,
  withFileLock,
} from '@delegate-git/core';
import { refuseAdoptionInAnotherWorktree, refuseSecondAdoption } from '../adoption-check.js';
import { type CommandModule, type Io, parseCommandArgs, usageError } from '../command.js';
import { writeFileAtomic } from '../fs.js';
import {
  configInWorkTree,
  huskyFilesToCommit,
  installClientHooks,
  installHookCli,
  installHookFile,
  keptNote,
  planClientHooks,
  planHookCli,
  serverHooksDir,
} from '../hook-install.js';
import { gitDirInWorkTree, gitDirInWorkTreeReason, installedHooksRecord } from '../hooks-in-effect.js';
import {
  fetchKeepingLedger,
  sayingWhenSlow,
  setLedgerRefspec,
  takeInRemoteLedger,
  trackingRef,
} from '../ledger-intake.js';
import { type NewKey, registeredKeyFile, registerKey } from '../trust-files.js';

const help = `
Usage: delegate-git init [--protect <glob>]... [--key <name>] [--keys-dir <dir>] [--no-hook] [--json]
       delegate-git init --server      (in a bare repository: install the pre-receive hook)

Sets up delegate-git in the current git repository. Idempotent: what exists is kept, never overwritten. Two
inits at once in one repository take turns (<git common dir>/delegate-git/init.lock): the second keeps what the
first wrote, as a rerun does, or fails (nothing written) when the first holds the lock longer than 15 s.
  - writes ${POLICY_PATH} (repository id, protected globs) unless it exists; refused where another branch,
    here or on a remote (asked with git ls-remote), holds one already, or another worktree of this repository
    holds one not committed yet: a repository adopts once (merge that branch if you trust the keys it names, or
    run init on it);
  - in a new adoption, creates the keys directory (default ${DEFAULT_KEYS_DIR}) and registers your public key
    there with the roles delegator and reviewer; where delegate-git is adopted already, prints the commands a
    trusted reviewer runs to add your key instead (a key file is committed only with reviewers' approval);
  - generates your personal signing key if you have none ($XDG_CONFIG_HOME/delegate-git/keys/<name>.key, 0600);
  - when it writes a new policy, signs your approval of it and of your key file: that first policy and trust
    root are the repository's trust anchor;
  - sets notes.delegations.mergeStrategy=cat_sort_uniq and, for each remote, a fetch refspec so that
    git fetch brings its ledger into refs/notes/remotes/<remote>/delegations;
  - installs the pre-commit hook, and the pre-merge-commit hook that git runs instead for the commit of a
    merge; and the post-merge and post-rewrite hooks, which after a 'git pull' (a rebase or a fast-forward
    too) take the records it fetched into this clone's ledger, so that the ledger can be pushed; and the
    pre-push hook, which does the same before a push (a pull that found the branch up to date ran neither),
    or says to sync. They go into
    husky when the repository uses it, else where git runs hooks; an existing hook is chained, never
    replaced (a hook that is a symbolic link is chained too). Refused, before anything is written, when
    core.hooksPath comes from the global or system git config (every repository's hooks) or names a directory
    the repository tracks: add a 'delegate-git hook pre-commit' line to those hooks yourself and use --no-hook;
    and when it is set to the empty string (git then runs no hook), set in a file of the work tree, or names a
    directory in the work tree git does not track (a checkout replaces what is there);
  - refuses a git directory inside the work tree under a name other than .git (a checkout writes its hooks and
    config), and warns of any git configuration file read from the work tree.

Options:
  --protect <glob>   paths that must be promoted whether or not they were ever delegated (repeatable);
                     asked for on a terminal when omitted
  --key <name>       your signing key's name (default: $USER, else $USERNAME, else your account's name)
  --keys-dir <dir>   where the trust root lives in the repository (default ${DEFAULT_KEYS_DIR})
  --no-hook          do not install the hooks
  --server           in a bare repository: install hooks/pre-receive (chaining an existing one)
  --json             print what was done as JSON

Example:
  delegate-git init --protect 'src/**' --protect 'package.json'
  git add .delegate-git && git commit -m "Adopt delegate-git"
`;

export default {
  summary: 'set up delegate-git in this repository (policy, keys, notes config)',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values } = parseCommandArgs(
      'init',
      argv,
      {
        protect: { type: 'string', multiple: true },
        key: { type: 'string' },
        'keys-dir': { type: 'string' },
        'no-hook': { type: 'boolean' },
        server: { type: 'boolean' },
        json: { type: 'boolean' },
      },
      false,
    );
    // The server judges by the policy committed on its default branch, and --server is there to install the hook.
    const clientOnly = (['protect', 'key', 'keys-dir', 'no-hook'] as const).filter(
      (o) => values[o] !== undefined,
    );
    if (values.server && clientOnly.length > 0)
      throw usageError(
        'init',
        `${clientOnly.map((o) => `--${o}`).join(', ')} do${clientOnly.length === 1 ? 'es' : ''} not apply with --server: a server judges pushes by the policy and keys committed on its default branch, and --server installs its pre-receive hook. Nothing was written. Run \`delegate-git init --server\` alone.`,
      );
    const repo = await Repository.open(io.cwd, io.env, io.err);
    try {
      const top = repo.layout.topLevel;
      if (values.server) return await initServer(repo, io, Boolean(values.json));
      if (top === null) {
        throw new DelegateGitError(
          'USAGE',
          repo.layout.isBare
            ? 'This is a bare repository. Run `delegate-git init --server` here for the pre-receive hook, or `delegate-git init` in a clone.'
            : 'This directory is inside the git directory, not the work tree: run `delegate-git init` in the work tree.',
        );
      }
      // The whole adoption is made holding a lock of the repository (its common git dir, which linked worktrees
      // share): two inits at once would each write a policy with a repository id of its own over the other's, and
      // each sign an anchor approval under its own id, approvals of "another repository" the ledger keeps for good.
      // The second waits for the first, then goes on as a rerun would: it finds the first's policy and keeps it.
      return await withFileLock(
        path.join(repo.layout.commonDir, 'delegate-git', 'init.lock'),
        { waitMs: INIT_LOCK_WAIT_MS, holderDoing: 'is setting up delegate-git in this repository (init)' },
        () => initClient(repo, top, values, io),
      );
    } finally {
      await repo.close();
    }
  },
} satisfies CommandModule;

/** How long a second init waits for the first (which may be fetching origin's ledger) before it gives up. */
const INIT_LOCK_WAIT_MS = 15_000;

async function initClient(
  repo: Repository,
  top: string,
  values: { protect?: string[]; key?: string; 'keys-dir'?: string; 'no-hook'?: boolean; json?: boolean },
  io: Io,
): Promise<number> {
  // A git directory a checkout writes into (its hooks, its config, the ledger's refs) is refused first, with or without
  // hooks: nothing init sets up there would hold.
  const exposed = await gitDirInWorkTree(repo.layout);
  if (exposed !== null) throw new DelegateGitError('USAGE', gitDirInWorkTreeReason(exposed, top, 'refusal'));
  // Where the hooks go is settled next: a hooks directory init must not write to is refused before the key,
  // the key file or the policy exist, so nothing is left half set up.
  const hooks = values['no-hook'] ? null : await planClientHooks(repo);
  const done: string[] = [];
  const { policy, created, resumed } = await choosePolicy(top, values, io);
  if (created) await refuseLinkedKeysDir(top, policy.keysDir);
  // The signing key and the key file come before a new policy is written: a run that fails on them (an unusable
  // DELEGATE_GIT_SIGNING_KEY, a name taken by another key) leaves no policy behind, so the next run still writes
  // the policy and approves it as the trust anchor, instead of keeping a policy that nobody approved.
  const keyName = values.key ?? defaultKeyName(io.env);
  const key = await ensureSigningKey(keyName, io, done);
  const email = (await gitTry(['config', 'user.email'], { cwd: top, env: io.env })).stdout.toString().trim();
  const newKey: NewKey = {
    name: keyName,
    email,
    publicKey: key.publicKey.base64,
    roles: ['delegator', 'reviewer'],
  };
  let keyFile: string | null;
  if (created) {
    const registered = await registerKey(top, policy.keysDir, newKey);
    keyFile = registered.file;
    done.push(
      registered.created ? `registered your public key in ${keyFile}` : `your key is already in ${keyFile}`,
    );
    if (resumed) done.unshift(`kept ${POLICY_PATH}, written here and not committed yet, as the one to adopt`);
    else {
      await writeFileAtomic(path.join(top, POLICY_PATH), policyText(policy));
      done.unshift(
        `wrote ${POLICY_PATH} (protect: ${policy.protect.length ? policy.protect.join(', ') : 'nothing yet'})`,
      );
    }
    await approveAnchor(repo, top, policy, keyFile, keyName, key, email, done);
  } else {
    // Where delegate-git is adopted already, a key file is committed only with reviewers' approval, so one
    // written here could not be committed by its owner, and left untracked it would stop the pull that brings
    // the reviewer's copy. A reviewer adds it instead (the same bytes: keys add writes it the same way).
    keyFile = await registeredKeyFile(
      top,
      policy.keysDir,
      keyName,
      key.publicKey,
      // A sparse checkout may leave the keys out of the work tree: the index holds this checkout's.
      checkoutSnapshot(top, repo.layout.gitDir, repo.objects, repo.env),
    );
    done.unshift(`kept the existing ${POLICY_PATH}`);
    done.push(
      keyFile === null
        ? `your key is not in the trust root (${policy.keysDir}): a reviewer adds it (below)`
        : `your key is already in ${keyFile}`,
    );
  }
  await configureNotes(repo, io, done);
  if (!created) done.push(...(await takeOriginLedger(repo, io)));
  if (hooks) {
    // git runs pre-merge-commit, not pre-commit, for the commit a merge makes by itself; post-merge and
    // post-rewrite take in the records a pull fetched.
    for (const [name, where] of Object.entries(await installClientHooks(repo, hooks)))
      done.push(`installed the ${name} hook: ${where.join(', ')}`);
  } else await rm(installedHooksRecord(repo.layout.commonDir), { force: true }); // hooks of the user's own making
  const husky = hooks ? await huskyFilesToCommit(repo, hooks) : [];
  const inWorkTree = await configInWorkTree(repo);
  if (inWorkTree.length > 0)
    io.err(
      `delegate-git init: warning: git reads configuration from ${inWorkTree.join(', ')}, in the work tree: a branch that changes ${inWorkTree.length > 1 ? 'one' : 'it'} changes this clone's git configuration as soon as it is checked out, such as where git runs hooks from (attest, delegate and sync then warn that the gate does not run) or a program git runs itself (core.fsmonitor). Include a copy kept outside the work tree instead.\n`,
    );
  // Adopting a repository with history: what it holds under the policy was judged by nobody, and every gate
  // judges it (the first push judges every file of the adopting tip, verify every file of a revision).
  const present = created ? await protectedFilesPresent(top, policy, io.env) : [];
  if (values.json)
    io.out(
      `${JSON.stringify({ policy: POLICY_PATH, keysDir: policy.keysDir, key: keyName, keyid: key.publicKey.keyid, keyFile, protectedPresent: present.length, huskyToCommit: husky, done }, null, 2)}\n`,
    );
  else
    io.out(
      `${done.map((d) => `  ${d}\n`).join('')}\n${approveFirst(present, policy)}${nextStep(policy, created, keyFile, newKey, husky)}\n`,
    );
  return 0;
}

/**
 * In a clone of an adopted repository: origin's ledger taken in now, so the first record made here builds on it (a
 * ledger begun apart from it is refused by git at the next push until a sync joins the two).
 */
async function takeOriginLedger(repo: Repository, io: Io): Promise<string[]> {
  const opts = { cwd: repo.cwd, env: repo.env };
  if ((await gitTry(['remote', 'get-url', 'origin'], opts)).code !== 0) return [];
  try {
    const theirs = await fetchKeepingLedger('origin', trackingRef('origin'), io, opts);
    if (theirs === null) return [];
    const ours = await repo.ledger.tip();
    const { how } = await sayingWhenSlow(
      io,
      "delegate-git init: checking every record of origin's ledger before taking it in...\n",
      takeInRemoteLedger(repo, 'origin', ours, theirs, "delegate-git init: take in origin's ledger"),
    );
    return how === 'up to date' ? [] : [`took origin's ledger (${theirs.slice(0, 12)}) into this clone's`];
  } catch (error) {
    if (!(error instanceof DelegateGitError)) throw error;
    io.err(`delegate-git init: warning: origin's ledger was not taken in: ${error.message}\n`);
    return [];
  }
}

/** The files of the index the policy protects (the governance files aside). */
async function protectedFilesPresent(top: string, policy: Policy, env: NodeJS.ProcessEnv): Promise<string[]> {
  const listed = await git(['ls-files', '-z'], { cwd: top, env });
  const governed = governedMatcher(policy);
  return splitZ(listed).filter((file) => governed.isProtected(file) && !isGovernanceFile(policy, file));
}

/** Named in init's advice: the first few files already present under the policy. */
const NAMED_PRESENT = 5;

function approveFirst(present: string[], policy: Policy): string {
  if (present.length === 0) return '';
  const named = present.slice(0, NAMED_PRESENT).map(shownPath).join(', ');
  const more = present.length > NAMED_PRESENT ? ` and ${present.length - NAMED_PRESENT} more` : '';
  const pathspecs = policy.protect.map((glob) => shellQuote(`:(glob)${glob}`)).join(' ');
  return [
    `${present.length} file(s) the policy protects are here already (${named}${more}), and nothing promotes them:`,
    'every gate refuses them (the server judges every file of the adopting push). Review them, then approve their',
    'content before you push the adoption:',
    `  git ls-files -z -- ${pathspecs} | xargs -0 delegate-git attest --approve --yes --`,
    '',
  ].join('\n');
}

/**
 * What to do after init: commit a new adoption, or husky's lines, or have a reviewer add the key of a newcomer to an
 * adopted one.
 */
function nextStep(
  policy: Policy,
  created: boolean,
  keyFile: string | null,
  key: NewKey,
  husky: string[],
): string {
  const huskyFiles = husky.map(shellQuote).join(' ');
  if (created)
    return `Next: commit them: git add ${[POLICY_PATH, policy.keysDir, huskyFiles].filter(Boolean).join(' ')} && git commit -m "Adopt delegate-git"`;
  const huskyStep =
    husky.length > 0
      ? `Next: commit husky's hook files, which now run the gate: until they are committed, a git stash or reset --hard here takes the gate away, and no other clone runs it:\n  git add ${huskyFiles} && git commit -m "Run the delegate-git gate from husky"\n`
      : '';
  if (keyFile !== null)
    return huskyStep || 'Nothing to commit: the hooks are set up and your key is in the trust root.';
  const file = `${policy.keysDir}/${key.name}.json`;
  const approvers =
    policy.reviewThreshold > 1
      ? `${policy.reviewThreshold} trusted reviewers approve it`
      : 'a trusted reviewer approves it';
  return `${huskyStep}${[
    `Next: what you sign counts once your key is in the trust root on the default branch. Send a reviewer these`,
    `commands; they write ${file} as it would be written here, ${approvers}, and they commit and push it:`,
    `  delegate-git keys add ${key.name} --public-key ${key.publicKey} --roles ${key.roles.join(',')}${key.email ? ` --email ${shellQuote(key.email)}` : ''}`,
    `  delegate-git attest --approve ${shellQuote(file)}`,
    `  git add ${shellQuote(file)} && git commit -m "Trust the key of ${key.name}"`,
    '  git push --atomic origin HEAD refs/notes/delegations   # the approval travels with the commit',
  ].join('\n')}`;
}

/**
 * The policy this checkout holds: the work tree's, else the index's or HEAD's (a sparse checkout may leave the
 * `.delegate-git` directory out of the work tree); null where none does.
 */
async function policyHere(top: string, io: Io): Promise<{ text: string; committed: boolean } | null> {
  let text: string | null = null;
  const file = path.join(top, POLICY_PATH);
  if (existsSync(file)) text = await readFile(file, 'utf8');
  for (const name of [`:${POLICY_PATH}`, `HEAD:${POLICY_PATH}`]) {
    const blob = await gitTry(['cat-file', 'blob', name], { cwd: top, env: io.env });
    if (blob.code === 0) return { text: text ?? blob.stdout.toString('utf8'), committed: true };
  }
  return text === null ? null : { text, committed: false };
}

/**
 * The existing policy (kept as it is), or the one a new adoption will write (not written yet). A policy only in the
 * work tree (neither staged nor committed) is an adoption not finished here, say an init stopped before it approved
 * the policy: `resumed`, it is kept and approved as a new one would be.
 */
async function choosePolicy(
  top: string,
  values: { protect?: string[]; 'keys-dir'?: string },
  io: Io,
): Promise<{ policy: Policy; created: boolean; resumed?: true }> {
  const kept = await policyHere(top, io);
  // The policy in force is changed like any governed file (edited, approved, committed), never by init.
  if (kept && (values.protect || values['keys-dir']))
    io.err(
      kept.committed
        ? `delegate-git init: warning: a policy is committed here already, so --protect and --keys-dir were not applied. ` +
            `To change what is protected, edit ${POLICY_PATH}, have reviewers approve it (\`delegate-git attest --approve ` +
            `${POLICY_PATH}\`) and commit it.\n`
        : `delegate-git init: warning: ${POLICY_PATH} was written here already (not committed yet), so --protect and ` +
            '--keys-dir were not applied. Edit it, then run `delegate-git init` again to approve it as it stands.\n',
    );
  if (kept?.committed) return { policy: parsePolicy(kept.text), created: false };
  await refuseSecondAdoption(top, io);
  if (kept) return { policy: parsePolicy(kept.text), created: true, resumed: true };
  await refuseAdoptionInAnotherWorktree(top, io);
  let protect = values.protect ?? [];
  if (!values.protect && io.interactive) {
    const answer = await io.prompt(
      'Paths that must always be promoted (globs, comma-separated, empty for none): ',
    );
    protect = answer
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  }
  if (protect.length === 0)
    io.err(
      'delegate-git init: note: the policy protects no path (no --protect given): only paths a record was ever made ' +
        `for are governed. To protect paths, edit "protect" in ${POLICY_PATH} and run \`delegate-git init\` again (it ` +
        'approves the policy as it stands) before committing it.\n',
    );
  const policy = parsePolicy(
    JSON.stringify({
      version: 1,
      repositoryId: randomUUID(),
      keysDir: values['keys-dir'] ?? DEFAULT_KEYS_DIR,
      protect,
      exclude: [],
      requireReview: false,
      reviewThreshold: 1,
      mode: 'enforce',
      protectDeletes: false,
    }),
    '--keys-dir/--protect',
  );
  return { policy, created: true };
}

/**
 * git tracks a link, not what it points to: key files written through a linked keys directory (into .git, say) could
 * never be committed, and the adoption would never be made.
 */
async function refuseLinkedKeysDir(top: string, keysDir: string): Promise<void> {
  const real = await realpath(path.join(top, keysDir)).catch(() => null);
  if (real === null || real === path.join(await realpath(top), keysDir)) return;
  throw new DelegateGitError(
    'USAGE',
    `The keys directory ${keysDir} is, or lies below, a symbolic link (to ${real}): git tracks the link, not the key files through it, so the adoption could never be committed. Nothing was written. Make ${keysDir} a directory of the work tree, or name another with --keys-dir, and run init again.`,
  );
}

async function ensureSigningKey(name: string, io: Io, done: string[]) {
  if (io.env.DELEGATE_GIT_SIGNING_KEY || listSigningKeys(io.env).includes(name)) {
    const loaded = loadSigningKey(name, io.env);
    done.push(`using your signing key from ${loaded.source}`);
    return loaded.key;
  }
  const key = generateSigningKey();
  const file = saveSigningKey(name, key, io.env);
  done.push(`generated your signing key ${file} (keep it private; it never enters the repository)`);
  return key;
}

async function configureNotes(repo: Repository, io: Io, done: string[]): Promise<void> {
  const opts = { cwd: repo.cwd, env: repo.env };
  await gitText(['config', 'notes.delegations.mergeStrategy', 'cat_sort_uniq'], opts);
  const remotes = (await gitText(['remote'], opts)).split('\n').filter(Boolean);
  for (const remote of remotes) {
    for (const overwriting of (await setLedgerRefspec(remote, opts)).overwriting)
      io.err(
        `delegate-git init: warning: remote.${remote}.fetch has ${overwriting}, so a plain \`git fetch ${remote}\` ` +
          `replaces this clone's ${LEDGER_REF} with the remote's and drops every record made here and not synced ` +
          `yet. Remove it (\`git config --fixed-value --unset remote.${remote}.fetch '${overwriting}'\`) and ` +
          'exchange the ledger with `delegate-git sync`, which merges both sides.\n',
      );
  }
  done.push(
    `set notes.delegations.mergeStrategy=cat_sort_uniq${remotes.length ? ` and the ledger fetch refspec for ${remotes.join(', ')}` : ' (no remote yet: once you add one, push this branch and the ledger to it together, `git push --atomic <remote> <branch> refs/notes/delegations`; then `delegate-git sync <remote>` exchanges the ledger with it and has `git fetch` bring its records from then on)'}`,
  );
}

/** Whether `key` has approved each subject (its path and blob) in the ledger, with a signature that verifies. */
async function approvedAlready(
  repo: Repository,
  subjects: ReadonlyArray<{ path: string; gitBlob: string }>,
  key: SigningKey,
): Promise<boolean> {
  for (const subject of subjects) {
    const lines = await repo.ledger.linesOn(subject.gitBlob);
    const approved = lines.some((line) => {
      const decoded = decodeRecord(line);
      if (!decoded.ok) return false;
      const r = decoded.record;
      const { keyid, sig } = r.envelope.signatures[0]!;
      const signature = decodeBase64Strict(sig);
      return (
        r.kind === 'review' &&
        r.decision === 'approve' &&
        keyid === key.publicKey.keyid &&
        r.subjects.some((s) => s.path === subject.path && s.gitBlob === subject.gitBlob) &&
        signature !== null &&
        key.publicKey.verify(pae(IN_TOTO_PAYLOAD_TYPE, r.body), signature)
      );
    });
    if (!approved) return false;
  }
  return true;
}

/** The first policy and key file are the trust anchor: their author approves them, so the adopting commit passes. */
async function approveAnchor(
  repo: Repository,
  top: string,
  policy: Policy,
  keyFile: string,
  keyName: string,
  key: SigningKey,
  email: string,
  done: string[],
): Promise<void> {
  const files = [POLICY_PATH, keyFile];
  const ids = (await git(['hash-object', '-w', '--', ...files], { cwd: top, env: repo.env }))
    .toString()
    .split('\n');
  const subjects = await Promise.all(
    files.map(async (p, i) => ({
      path: p,
      gitBlob: ids[i]!,
      sha256: createHash('sha256')
        .update(await readFile(path.join(top, p)))
        .digest('hex'),
    })),
  );
  // A run again over an adoption approved here but not committed yet has nothing more to sign.
  if (await approvedAlready(repo, subjects, key)) {
    done.push(`the policy and your key file are approved as the trust anchor already (${keyName})`);
    return;
  }
  const statement = reviewStatement(subjects, {
    decision: 'approve',
    reviewer: { name: keyName, email },
    comment: 'trust anchor written by delegate-git init',
    repository: { id: policy.repositoryId },
    createdAt: rfc3339(),
  });
  await recordStatement(repo.ledger, statement, key, 'delegate-git init: approve the trust anchor');
  done.push(`approved the new policy and your key file as the trust anchor (${keyName})`);
}

async function initServer(repo: Repository, io: Io, asJson: boolean): Promise<number> {
  if (!repo.layout.isBare) {
    throw new DelegateGitError(
      'USAGE',
      '--server is for the bare repository that receives pushes; this one has a work tree.',
    );
  }
  const dir = await serverHooksDir(repo);
  const hook = await installHookFile(dir, 'pre-receive', await installHookCli(repo, await planHookCli(repo)));
  const file = hook.file;
  const note = keptNote(hook);
  const opts = { cwd: repo.cwd, env: repo.env };
  // For a `git notes merge` run here by hand; the hook itself refuses a forced update or a deletion of the ledger.
  await gitText(['config', 'notes.delegations.mergeStrategy', 'cat_sort_uniq'], opts);
  // Malformed objects (a tree naming an entry twice, say) are refused before the hook runs: what git and a reader
  // make of one need not agree.
  await gitText(['config', 'receive.fsckObjects', 'true'], opts);
  await gitText(['config', 'delegate-git.server', 'true'], opts);
  // New refs are judged by the default branch's policy, so the branch HEAD names must be the one pushed first.
  const head = (await gitTry(['symbolic-ref', '-q', 'HEAD'], opts)).stdout.toString().trim();
  if (asJson)
    io.out(
      `${JSON.stringify({ hook: file, kept: hook.kept?.file ?? null, defaultBranch: head || null }, null, 2)}\n`,
    );
  else
    io.out(
      `  installed ${file}${note ? ` (${note})` : ''}\n  pushes are now judged by the policy and trust root in force on this repository\n` +
        `  new refs are judged by the policy of the default branch, ${head || '(none: HEAD is detached)'}: push the adopting commit to that branch,\n` +
        '  or point HEAD at yours (git symbolic-ref HEAD refs/heads/<branch>)\n',
    );
  return 0;
}

function defaultKeyName(env: NodeJS.ProcessEnv): string {
  // A container or cron job sets no USER: the account's name still tells two teammates apart where 'me' would not.
  const raw = env.USER ?? env.USERNAME ?? accountName() ?? 'me';
  return raw.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 64) || 'me';
}

function accountName(): string | undefined {
  try {
    return userInfo().username || undefined;
  } catch {
    return undefined; // no entry for this uid in the password database
  }
}
