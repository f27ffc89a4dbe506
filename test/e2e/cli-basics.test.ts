/**
 * The first commands end to end with the built CLI (init, keygen, keys, check, show), and what every command owes its
 * user: `--help` with an example, a usage error that names the unknown flag and the help, and exit 2 with a clear
 * message when the question cannot be answered (no repository, no git, an unusable signing key, a corrupt policy).
 * Every refusal is paired with a control that passes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POLICY_PATH } from '../../packages/core/src/index.js';
import {
  adoptedWithPromotedA,
  cli,
  cliOk,
  commit,
  copyWorkTree,
  gitOk,
  gitRun,
  LEDGER,
  makeWorkTree,
  noteLines,
  OPERATOR,
  operatorEnv,
  type Run,
  refTip,
  type Story,
  storyCli,
  storyOutsideActions,
  tagOf,
  writeFiles,
} from '../support/cli-story.js';
import { repoRoot } from '../support/paths.js';
import { subjectOf, testKey, verdictLine } from '../support/records.js';

const KEY_FILE = `.delegate-git/keys/${OPERATOR}.json`;

let story: Story;
/** Adopted (protect src/**) with src/a.ts promoted by a verdict and committed; describes work on copies. */
let base: string;
let blobA: string;

beforeAll(async () => {
  story = storyOutsideActions('delegate-git-basics-');
  ({ dir: base, blob: blobA } = await adoptedWithPromotedA(story, 'base'));
});

afterAll(() => story.cleanup());

function json<T>(run: Run): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
}

function keyDir(env: NodeJS.ProcessEnv = story.env): string {
  return path.join(env.XDG_CONFIG_HOME!, 'delegate-git', 'keys');
}

/** Runs the built CLI without blocking, so a matrix of invocations shares the wait. */
function cliAsync(cwd: string, args: string[], env: NodeJS.ProcessEnv = story.env): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [storyCli, ...args], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({
        code: code ?? 128,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });
}

/** Each invocation's result, in order, at most `limit` at a time. */
async function runAll(
  items: Array<{ cwd: string; args: string[]; env?: NodeJS.ProcessEnv }>,
  limit = 4,
): Promise<Run[]> {
  const results: Run[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) {
      const item = items[i]!;
      results[i] = await cliAsync(item.cwd, item.args, item.env);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/** Everything init writes or configures: the repository's files and config, the hooks, and the operator's keys. */
function initState(dir: string): Record<string, string> {
  const state: Record<string, string> = {};
  const walk = (root: string, label: string) => {
    if (!fs.existsSync(root)) return;
    for (const entry of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const abs = path.join(entry.parentPath, entry.name);
      const mode = (fs.statSync(abs).mode & 0o777).toString(8);
      state[`${label}/${path.relative(root, abs)}`] =
        `${mode} ${createHash('sha256').update(fs.readFileSync(abs)).digest('hex')}`;
    }
  };
  walk(path.join(dir, '.delegate-git'), 'policy');
  walk(path.join(dir, '.git', 'hooks'), 'hooks');
  walk(keyDir(), 'xdg');
  state.config = fs.readFileSync(path.join(dir, '.git', 'config'), 'utf8');
  state.ledger = refTip(story, dir, LEDGER) ?? '(none)';
  return state;
}

describe('init', () => {
  it('writes the policy with every --protect, registers and approves the key, configures notes; --json says so', () => {
    const dir = makeWorkTree(story, 'init-fresh');
    gitOk(story, dir, ['remote', 'add', 'origin', path.join(story.root, 'nowhere.git')]);
    const run = cliOk(story, dir, ['init', '--protect', 'src/**', '--protect', 'lib/*.ts', '--json']);
    const out = json<{ policy: string; keysDir: string; key: string; keyid: string; done: string[] }>(run);
    expect(out).toMatchObject({ policy: POLICY_PATH, keysDir: '.delegate-git/keys', key: OPERATOR });
    expect(out.keyid).toMatch(/^[0-9a-f]{64}$/);
    expect(out.done[0]).toBe(`wrote ${POLICY_PATH} (protect: src/**, lib/*.ts)`);
    expect(out.done).toContain(`approved the new policy and your key file as the trust anchor (${OPERATOR})`);

    const policy = JSON.parse(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8'));
    expect(policy.protect).toEqual(['src/**', 'lib/*.ts']);
    expect(policy.repositoryId).toMatch(/^[0-9a-f-]{36}$/);
    const keyFile = JSON.parse(fs.readFileSync(path.join(dir, KEY_FILE), 'utf8'));
    expect(keyFile).toMatchObject({ name: OPERATOR, email: `${OPERATOR}@example.com`, keyid: out.keyid });
    expect(keyFile.roles).toEqual(['delegator', 'reviewer']);
    expect(gitOk(story, dir, ['config', 'notes.delegations.mergeStrategy'])).toBe('cat_sort_uniq');
    expect(gitOk(story, dir, ['config', '--get-all', 'remote.origin.fetch']).split('\n')).toContain(
      '+refs/notes/delegations:refs/notes/remotes/origin/delegations',
    );
    expect(fs.readFileSync(path.join(dir, '.git', 'hooks', 'pre-commit'), 'utf8')).toContain(
      '# delegate-git hook',
    );
    // The anchor approval covers the policy and the key file: the adopting commit passes its own hook.
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'Adopt').code).toBe(0);
  });

  it('is idempotent: a second run changes no file, no config, no record, and keeps the existing policy', () => {
    const dir = makeWorkTree(story, 'init-twice');
    gitOk(story, dir, ['remote', 'add', 'origin', path.join(story.root, 'nowhere.git')]);
    const empty = initState(dir);
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    const first = initState(dir);
    // Control: the snapshot does see what init does.
    expect(first).not.toEqual(empty);

    const rerun = cliOk(story, dir, ['init', '--protect', 'other/**', '--json']);
    const again = json<{ done: string[] }>(rerun);
    expect(initState(dir)).toEqual(first);
    // Said, not silently dropped: the policy written first stays the one to adopt.
    expect(rerun.stderr).toContain(
      'was written here already (not committed yet), so --protect and --keys-dir were not applied',
    );
    // Not committed yet: the adoption this work tree started, kept as it is, approved already.
    expect(again.done[0]).toBe(
      `kept ${POLICY_PATH}, written here and not committed yet, as the one to adopt`,
    );
    expect(again.done).toContain(`your key is already in ${KEY_FILE}`);
    expect(again.done).toContain(
      `the policy and your key file are approved as the trust anchor already (${OPERATOR})`,
    );
    expect(JSON.parse(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8')).protect).toEqual(['src/**']);
    expect(gitOk(story, dir, ['config', '--get-all', 'remote.origin.fetch']).split('\n')).toHaveLength(2);
  });
});

describe('init run again over a forged approval of its anchor', () => {
  it('signs the anchor anew when the approval under its keyid does not verify; control: the genuine one is kept', () => {
    const dir = makeWorkTree(story, 'init-forged-anchor');
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    const blobs = [POLICY_PATH, KEY_FILE].map((f) => gitOk(story, dir, ['hash-object', f]));
    const genuine = blobs.map((b) => noteLines(story, dir, b));
    // The same line, its signature replaced by 64 zero bytes: right keyid, a signature that does not verify.
    for (const [i, blob] of blobs.entries()) {
      const envelope = JSON.parse(genuine[i]![0]!);
      envelope.signatures[0].sig = Buffer.alloc(64).toString('base64');
      gitOk(story, dir, ['notes', '--ref', LEDGER, 'add', '-f', '-m', JSON.stringify(envelope), blob]);
    }
    const rerun = json<{ done: string[] }>(cliOk(story, dir, ['init', '--json']));
    expect(rerun.done).toContain(
      `approved the new policy and your key file as the trust anchor (${OPERATOR})`,
    );
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'Adopt').code).toBe(0);

    const control = makeWorkTree(story, 'init-genuine-anchor');
    cliOk(story, control, ['init', '--protect', 'src/**']);
    expect(json<{ done: string[] }>(cliOk(story, control, ['init', '--json'])).done).toContain(
      `the policy and your key file are approved as the trust anchor already (${OPERATOR})`,
    );
  });
});

describe('init without --protect and without a terminal', () => {
  it('says the policy protects no path and how to change that; control: with --protect it says nothing of the kind', () => {
    const dir = makeWorkTree(story, 'init-unprotected');
    const bare = cliOk(story, dir, ['init']);
    expect(bare.stderr).toContain('the policy protects no path (no --protect given)');
    expect(JSON.parse(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8')).protect).toEqual([]);
    const other = makeWorkTree(story, 'init-protected');
    expect(cliOk(story, other, ['init', '--protect', 'src/**']).stderr).not.toContain('protects no path');
  });
});

describe('init and a fetch refspec that writes the ledger', () => {
  it('warns that a plain git fetch would drop local records; control: without it, no warning', () => {
    const dir = makeWorkTree(story, 'init-notes-refspec');
    gitOk(story, dir, ['remote', 'add', 'origin', path.join(story.root, 'nowhere.git')]);
    gitOk(story, dir, ['config', '--add', 'remote.origin.fetch', '+refs/notes/*:refs/notes/*']);
    const warned = cliOk(story, dir, ['init', '--protect', 'src/**']);
    expect(warned.stderr).toContain(
      "warning: remote.origin.fetch has +refs/notes/*:refs/notes/*, so a plain `git fetch origin` replaces this clone's refs/notes/delegations",
    );

    const plain = makeWorkTree(story, 'init-plain-refspec');
    gitOk(story, plain, ['remote', 'add', 'origin', path.join(story.root, 'nowhere.git')]);
    gitOk(story, plain, ['config', '--add', 'remote.origin.fetch', '+refs/notes/commits:refs/notes/commits']);
    expect(cliOk(story, plain, ['init', '--protect', 'src/**']).stderr).not.toContain('warning');
  });
});

describe('init --keys-dir', () => {
  it('refuses a directory git could never track, or the policy file itself, before writing anything; control: one of its own', () => {
    for (const [keysDir, why] of [
      ['.git/keys', 'must not be inside a .git directory'],
      [POLICY_PATH, 'must neither hold nor be the policy file'],
    ] as const) {
      const dir = makeWorkTree(story, `keys-dir-${keysDir.replace(/\W/g, '-')}`);
      const run = cli(story, dir, ['init', '--protect', 'src/**', '--keys-dir', keysDir]);
      expect(run.code, keysDir).toBe(2);
      expect(run.stderr).toContain(why);
      expect(fs.existsSync(path.join(dir, '.delegate-git'))).toBe(false);
      expect(fs.existsSync(path.join(dir, '.git', 'keys'))).toBe(false);
      expect(fs.existsSync(path.join(dir, '.git', 'hooks', 'pre-commit'))).toBe(false);
    }
    const linked = makeWorkTree(story, 'keys-dir-linked');
    fs.mkdirSync(path.join(linked, '.git', 'trust'));
    fs.symlinkSync('.git/trust', path.join(linked, 'trust'));
    const viaLink = cli(story, linked, ['init', '--protect', 'src/**', '--keys-dir', 'trust']);
    expect(viaLink.code).toBe(2);
    expect(viaLink.stderr).toContain('is, or lies below, a symbolic link');
    expect(fs.readdirSync(path.join(linked, '.git', 'trust'))).toEqual([]);
    expect(fs.existsSync(path.join(linked, '.delegate-git'))).toBe(false);

    const dir = makeWorkTree(story, 'keys-dir-own');
    cliOk(story, dir, ['init', '--protect', 'src/**', '--keys-dir', 'trust']);
    gitOk(story, dir, ['add', '.delegate-git', 'trust']);
    expect(commit(story, dir, 'adopt').code).toBe(0);
  });
});

describe('keygen', () => {
  // Its own XDG_CONFIG_HOME: the operator's key directory keeps exactly one key, so no command has to pick one.
  let env: NodeJS.ProcessEnv;
  beforeAll(() => {
    env = operatorEnv(story, 'keygen');
  });

  it('where the system refuses the write (the config home is a file), says so in one paragraph, with no stack', () => {
    const file = path.join(story.root, 'not-a-directory');
    fs.writeFileSync(file, 'x');
    const run = cli(story, story.root, ['keygen', 'laptop'], { ...env, XDG_CONFIG_HOME: file });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `delegate-git keygen: mkdir ${file}/delegate-git/keys failed: a part of the path is not a directory (ENOTDIR). Nothing was left half-written; fix that and run the command again.\n`,
    );
  });

  it('saves a 0600 PKCS#8 key under XDG_CONFIG_HOME (outside any repository) and prints its public half', () => {
    const run = cliOk(story, story.root, ['keygen', 'laptop', '--json'], env);
    const out = json<{ name: string; file: string; publicKey: string; keyid: string }>(run);
    expect(out.name).toBe('laptop');
    expect(out.file).toBe(path.join(env.XDG_CONFIG_HOME!, 'delegate-git', 'keys', 'laptop.key'));
    expect(fs.statSync(out.file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(out.file, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(out.keyid).toBe(createHash('sha256').update(Buffer.from(out.publicKey, 'base64')).digest('hex'));

    const text = cliOk(story, story.root, ['keygen', 'desktop'], env);
    expect(text.stdout).toContain(`Saved ${path.join(keyDir(env), 'desktop.key')} (mode 0600`);
    expect(text.stdout).toContain('Register it: delegate-git keys add desktop --public-key ');
  });

  it('refuses to overwrite an existing key (exit 2, the key unchanged) and refuses a bad name', () => {
    const first = json<{ file: string }>(cliOk(story, story.root, ['keygen', 'precious', '--json'], env));
    const pem = fs.readFileSync(first.file, 'utf8');
    const again = cli(story, story.root, ['keygen', 'precious'], env);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('a signing key named "precious" already exists');
    expect(again.stderr).toContain('never overwrites a private key');
    expect(fs.readFileSync(first.file, 'utf8')).toBe(pem);

    const badName = cli(story, story.root, ['keygen', '../escape'], env);
    expect(badName.code).toBe(2);
    expect(badName.stderr).toContain('is not a valid key name');
    expect(fs.existsSync(path.join(keyDir(env), '..', 'escape.key'))).toBe(false);
    // Control: another name is fine.
    expect(cli(story, story.root, ['keygen', 'escape'], env).code).toBe(0);

    // Only dots would name a file `...key` here and `...json` in the trust root.
    const dots = cli(story, story.root, ['keygen', '..'], env);
    expect(dots.code).toBe(2);
    expect(dots.stderr).toContain('".." is not a valid key name');
    expect(fs.existsSync(path.join(keyDir(env), '...key'))).toBe(false);
  });
});

describe('config set, several at once', () => {
  // Each `config set` reads the settings, changes one and writes them back: without a lock, two at once each wrote
  // back the file as it was before the other's change, and all exited 0 (rt46 f03).
  const settings: Array<[string, string, unknown]> = [
    ['worker.model', 'm1', 'm1'],
    ['worker.maxTokens', '1000', 1000],
    ['worker.timeoutMs', '5000', 5000],
    ['worker.idleTimeoutMs', '6000', 6000],
    ['verification.repeats', '5', 5],
    ['verification.timeoutMs', '7000', 7000],
    ['worker.endpoint', 'http://127.0.0.1:9/v1', 'http://127.0.0.1:9/v1'],
    ['verification.approval', 'deny', 'deny'],
  ];
  let dir: string;
  let file: string;
  beforeAll(() => {
    dir = makeWorkTree(story, 'config-at-once');
    file = path.join(dir, '.git', 'delegate-git', 'config.json');
  });

  it('keeps every setting each of 8 runs at once said it set', async () => {
    for (let round = 0; round < 2; round++) {
      fs.rmSync(file, { force: true });
      const runs = await Promise.all(
        settings.map(([key, value]) => cliAsync(dir, ['config', 'set', key, value])),
      );
      for (const run of runs) expect(run.code, run.stderr).toBe(0);
      const kept = JSON.parse(cliOk(story, dir, ['config', 'get']).stdout);
      for (const [key, , value] of settings)
        expect(
          key.split('.').reduce((node, part) => node[part], kept),
          key,
        ).toEqual(value);
      expect(fs.existsSync(`${file}.lock`)).toBe(false);
    }
  });

  it('takes over the lock a killed run left; waits for a running one, then refuses naming the lock, changing nothing', () => {
    const lock = `${file}.lock`;
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    fs.writeFileSync(lock, `${dead} ${os.hostname()} 0123456789abcdef\n`);
    cliOk(story, dir, ['config', 'set', 'worker.model', 'after-a-kill']);
    expect(fs.existsSync(lock)).toBe(false);

    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      fs.writeFileSync(lock, `${holder.pid} ${os.hostname()} 0123456789abcdef\n`);
      const before = fs.readFileSync(file, 'utf8');
      const refused = cli(story, dir, ['config', 'set', 'worker.model', 'while-held']);
      expect(refused.code).toBe(2);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(
        `Another delegate-git (process ${holder.pid}) is changing the same settings: it holds the lock file ${lock}, still after 5 s. Nothing was changed.`,
      );
      expect(refused.stderr).toContain(`if no other delegate-git is running, remove ${lock}`);
      expect(fs.readFileSync(file, 'utf8')).toBe(before);
      expect(fs.existsSync(lock)).toBe(true); // a running holder's lock is left alone
    } finally {
      holder.kill('SIGKILL');
      fs.rmSync(lock, { force: true });
    }
    // Control: removed, the next run sets.
    cliOk(story, dir, ['config', 'set', 'worker.model', 'while-held']);
    expect(JSON.parse(cliOk(story, dir, ['config', 'get', 'worker.model']).stdout)).toBe('while-held');
  });
});

describe('keys', () => {
  let dir: string;
  let bob: { publicKey: string; keyid: string };
  beforeAll(() => {
    dir = copyWorkTree(story, base, 'keys');
    bob = json(cliOk(story, dir, ['keygen', 'bob', '--json'], operatorEnv(story, 'bob')));
  });

  interface Listed {
    keys: Array<{
      name: string;
      file: string;
      keyid: string;
      roles: string[];
      email: string;
      revoked?: string;
      approvedBy: string[] | null;
    }>;
  }

  it('list --json shows the trust root; add registers a key (--json), once', () => {
    const before = json<Listed>(cliOk(story, dir, ['keys', 'list', '--json']));
    expect(before.keys.map((k) => [k.name, k.file, k.roles])).toEqual([
      [OPERATOR, KEY_FILE, ['delegator', 'reviewer']],
    ]);

    const args = [
      'keys',
      'add',
      'bob',
      '--public-key',
      bob.publicKey,
      '--roles',
      'reviewer',
      '--email',
      'bob@example.com',
    ];
    const added = json<{ name: string; file: string; created: boolean }>(
      cliOk(story, dir, [...args, '--json']),
    );
    expect(added).toEqual({ name: 'bob', file: '.delegate-git/keys/bob.json', created: true });
    const again = json<{ created: boolean }>(cliOk(story, dir, [...args, '--json']));
    expect(again.created).toBe(false);

    const after = json<Listed>(cliOk(story, dir, ['keys', 'list', '--json']));
    expect(after.keys.find((k) => k.name === 'bob')).toMatchObject({
      keyid: bob.keyid,
      roles: ['reviewer'],
      email: 'bob@example.com',
    });
    expect(cliOk(story, dir, ['keys', 'list']).stdout).toMatch(
      /^bob +[0-9a-f]{16} +reviewer +active +<bob@example\.com>\n {4}not approved as it is: no reviewer approved it/m,
    );
    // Who approved each key file as it is, as the gates judge it (a06).
    expect(after.keys.find((k) => k.name === 'bob')?.approvedBy).toBeNull();
    expect(after.keys.find((k) => k.name === OPERATOR)?.approvedBy).toEqual([OPERATOR]);
    const approved = copyWorkTree(story, dir, 'keys-approved');
    cliOk(story, approved, ['attest', '--approve', '.delegate-git/keys/bob.json', '--yes']);
    expect(cliOk(story, approved, ['keys', 'list']).stdout).toMatch(
      new RegExp(`^bob .*\\n {4}approved by ${OPERATOR}$`, 'm'),
    );
  });

  it('list and revoke see a key file in a subdirectory of the keys directory, as every gate trusts it', () => {
    const sub = copyWorkTree(story, dir, 'keys-subdir');
    const env = operatorEnv(story, 'carol');
    const carol = json<{ publicKey: string }>(cliOk(story, sub, ['keygen', 'carol', '--json'], env));
    cliOk(story, sub, ['keys', 'add', 'carol', '--public-key', carol.publicKey, '--roles', 'reviewer']);
    fs.mkdirSync(path.join(sub, '.delegate-git/keys/team'));
    fs.renameSync(
      path.join(sub, '.delegate-git/keys/carol.json'),
      path.join(sub, '.delegate-git/keys/team/carol.json'),
    );
    fs.writeFileSync(path.join(sub, '.delegate-git/keys/team/README.md'), 'not a key\n'); // control: not listed
    const listed = json<Listed>(cliOk(story, sub, ['keys', 'list', '--json']));
    expect(listed.keys.map((k) => k.file)).toContain('.delegate-git/keys/team/carol.json');
    expect(listed.keys.map((k) => k.file)).not.toContain('.delegate-git/keys/team/README.md');
    const revoked = cliOk(story, sub, ['keys', 'revoke', 'carol']);
    expect(revoked.stdout).toContain('in .delegate-git/keys/team/carol.json');
  });

  it('add notes a key of the same holder (its email, any case): one reviewer toward a threshold; control: another email', () => {
    const copy = copyWorkTree(story, dir, 'keys-same-holder');
    const keyOf = (name: string) =>
      json<{ publicKey: string }>(cliOk(story, copy, ['keygen', name, '--json'], operatorEnv(story, name)));
    const add = (name: string, email: string, ...more: string[]) =>
      cliOk(story, copy, [
        'keys',
        'add',
        name,
        '--public-key',
        keyOf(name).publicKey,
        '--roles',
        'reviewer',
        '--email',
        email,
        ...more,
      ]);
    expect(add('dave', 'dave@example.com').stderr).toBe('');
    const rotated = add('dave-2', 'DAVE@example.com');
    expect(rotated.stderr).toContain(
      "note: dave has the same email: their approvals and this key's count as one reviewer's toward reviewThreshold",
    );
    expect(
      json<{ sameHolderAs?: string[] }>(add('dave-3', 'dave@example.com', '--json')).sameHolderAs,
    ).toEqual(['dave', 'dave-2']);
    expect(add('erin', 'erin@example.com').stderr).toBe('');
  });

  it('add refuses a key that is not one, a small-order key and an unknown role, writing nothing', () => {
    /** keys add of bob's public key under `name` with `roles`. */
    const addBob = (name: string, roles: string, ...more: string[]) =>
      cli(story, dir, ['keys', 'add', name, '--public-key', bob.publicKey, '--roles', roles, ...more]);
    const attempts: Array<[string, string, string]> = [
      ['mallory', 'not-a-key', 'the public key is not standard base64'],
      ['mallory', Buffer.alloc(32).toString('base64'), 'the public key is small order'],
    ];
    for (const [name, key, message] of attempts) {
      const run = cli(story, dir, ['keys', 'add', name, '--public-key', key, '--roles', 'reviewer']);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(message);
    }
    const role = addBob('mallory', 'admin');
    expect(role.code).toBe(2);
    expect(role.stderr).toContain('--roles must list delegator and/or reviewer (got "admin")');
    const when = addBob('mallory', 'reviewer', '--not-after', 'tomorrow');
    expect(when.code).toBe(2);
    expect(when.stderr).toContain(
      '--not-after must be an RFC 3339 UTC time like 2026-01-31T12:00:00Z (got "tomorrow")',
    );
    expect(fs.existsSync(path.join(dir, '.delegate-git/keys/mallory.json'))).toBe(false);
    // One key under two names: refused, and nothing written; the same key again under its own name is no change.
    const twice = addBob('mallory', 'reviewer');
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain(
      'That key is already registered in .delegate-git/keys/bob.json, so no key file named mallory was written',
    );
    expect(fs.existsSync(path.join(dir, '.delegate-git/keys/mallory.json'))).toBe(false);
    const again = addBob('bob', 'reviewer');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('That key is already registered in .delegate-git/keys/bob.json.');
    // Asked for what the file does not say, it says that nothing changed, and fails.
    const before = fs.readFileSync(path.join(dir, '.delegate-git/keys/bob.json'), 'utf8');
    const roles = addBob('bob', 'delegator,reviewer');
    expect(roles.code).toBe(2);
    expect(roles.stderr).toContain('with another roles; keys add changed nothing');
    expect(fs.readFileSync(path.join(dir, '.delegate-git/keys/bob.json'), 'utf8')).toBe(before);
    const never = addBob(
      'mallory',
      'reviewer',
      '--not-before',
      '2027-01-01T00:00:00Z',
      '--not-after',
      '2026-01-01T00:00:00Z',
    );
    expect(never.code).toBe(2);
    expect(never.stderr).toContain('the key would never be valid');
  });

  it('revoke sets revoked (--json, --at) and list shows it; an unknown name is refused', () => {
    const revoked = json<{ name: string; revoked: string; file: string }>(
      cliOk(story, dir, ['keys', 'revoke', 'bob', '--at', '2026-01-02T03:04:05Z', '--json']),
    );
    expect(revoked).toMatchObject({
      name: 'bob',
      file: '.delegate-git/keys/bob.json',
      revoked: '2026-01-02T03:04:05Z',
    });
    expect(JSON.parse(fs.readFileSync(path.join(dir, '.delegate-git/keys/bob.json'), 'utf8')).revoked).toBe(
      '2026-01-02T03:04:05Z',
    );
    const listed = json<Listed>(cliOk(story, dir, ['keys', 'list', '--json']));
    expect(listed.keys.find((k) => k.name === 'bob')?.revoked).toBe('2026-01-02T03:04:05Z');
    expect(listed.keys.find((k) => k.name === OPERATOR)?.revoked).toBeUndefined();
    expect(cliOk(story, dir, ['keys', 'list']).stdout).toContain('REVOKED 2026-01-02T03:04:05Z');

    const unknown = cli(story, dir, ['keys', 'revoke', 'nobody']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('No key named "nobody"');
    const badTime = cli(story, dir, ['keys', 'revoke', OPERATOR, '--at', 'yesterday']);
    expect(badTime.code).toBe(2);
    expect(badTime.stderr).toContain('--at must be an RFC 3339 UTC time');
    expect(badTime.stderr).not.toContain('Fix or remove the key file');
    expect(
      json<Listed>(cliOk(story, dir, ['keys', 'list', '--json'])).keys.find((k) => k.name === OPERATOR)
        ?.revoked,
    ).toBeUndefined();
  });

  it("keys add says how many reviewers' approvals the key file needs (admin audit a07); control: one reviewer's at the default threshold", () => {
    const copy = copyWorkTree(story, base, 'keys-add-threshold');
    const key = json<{ publicKey: string }>(
      cliOk(story, copy, ['keygen', 'k2', '--json'], operatorEnv(story, 'k2')),
    );
    const add = (name: string) => ['keys', 'add', name, '--public-key', key.publicKey, '--roles', 'reviewer'];
    expect(cliOk(story, copy, add('k2')).stdout).toContain("Commit it with a reviewer's approval.");
    fs.rmSync(path.join(copy, '.delegate-git/keys/k2.json'));
    const policyFile = path.join(copy, POLICY_PATH);
    const policy = JSON.parse(fs.readFileSync(policyFile, 'utf8')) as { reviewThreshold: number };
    fs.writeFileSync(policyFile, `${JSON.stringify({ ...policy, reviewThreshold: 2 }, null, 2)}\n`);
    gitOk(story, copy, ['add', POLICY_PATH]);
    expect(cliOk(story, copy, add('k2')).stdout).toContain("Commit it with 2 reviewers' approvals.");
  });

  it('revoke refuses to leave fewer reviewers than the policy needs (nothing could be approved again); control: the new key added first, and --force', () => {
    const copy = copyWorkTree(story, base, 'keys-last-reviewer');
    const operatorFile = path.join(copy, `.delegate-git/keys/${OPERATOR}.json`);
    const before = fs.readFileSync(operatorFile, 'utf8');
    const last = cli(story, copy, ['keys', 'revoke', OPERATOR]);
    expect(last.code).toBe(2);
    expect(last.stderr).toContain(`Revoking ${OPERATOR} would leave 0 reviewer(s)`);
    expect(last.stderr).toContain(`Add the new key first`);
    expect(fs.readFileSync(operatorFile, 'utf8')).toBe(before);

    // Control: the holder's new key added first (the rotation's order: the same reviewer, by its email), and the
    // old key's revocation goes through.
    const next = json<{ publicKey: string }>(
      cliOk(story, copy, ['keygen', 'op2', '--json'], operatorEnv(story, 'op2')),
    );
    const listed = json<Listed>(cliOk(story, copy, ['keys', 'list', '--json']));
    const email = listed.keys.find((k) => k.name === OPERATOR)!.email;
    const add = ['keys', 'add', 'op2', '--public-key', next.publicKey, '--roles', 'reviewer'];
    cliOk(story, copy, [...add, '--email', email.toUpperCase()]);
    const rotated = cliOk(story, copy, ['keys', 'revoke', OPERATOR]);
    expect(JSON.parse(fs.readFileSync(operatorFile, 'utf8')).revoked).toMatch(/Z$/);
    // One reviewer left, as many as the threshold asks: one lost key from no approvable change (admin audit a02).
    expect(rotated.stderr).toContain('1 reviewer(s) are left, as many as reviewThreshold asks');
    // The new key is now the last reviewer; --force revokes it anyway (a compromised key).
    expect(cli(story, copy, ['keys', 'revoke', 'op2']).code).toBe(2);
    cliOk(story, copy, ['keys', 'revoke', 'op2', '--force']);

    // Control: with two other reviewers (two people) left, the revocation says nothing more.
    const team = copyWorkTree(story, base, 'keys-team-left');
    for (const name of ['rev2', 'rev3']) {
      const key = json<{ publicKey: string }>(
        cliOk(story, team, ['keygen', name, '--json'], operatorEnv(story, name)),
      );
      cliOk(story, team, [
        'keys',
        'add',
        name,
        '--public-key',
        key.publicKey,
        '--roles',
        'reviewer',
        '--email',
        `${name}@example.com`,
      ]);
    }
    const left = cliOk(story, team, ['keys', 'revoke', OPERATOR]);
    expect(left.stderr).not.toContain('warning');
  });
});

interface CheckJson {
  results: Array<{
    path: string;
    promoted: boolean;
    reason: string;
    by: string[];
    governed: boolean;
    sha256: string;
    gitBlob: string;
  }>;
  deletions: unknown[];
  mode: string;
  exitCode: number;
}

describe('check <path> where the object store cannot be written', () => {
  it('judges content already stored (a promoted file) and refuses the rest; control: a writable store answers the same', () => {
    const dir = copyWorkTree(story, base, 'read-only-store');
    writeFiles(dir, { 'src/new.ts': 'export const n = 1;\n' });
    // git as on a read-only mount: storing an object fails, everything else works.
    const realGit = (process.env.PATH ?? '')
      .split(path.delimiter)
      .map((d) => path.join(d, 'git'))
      .find((f) => fs.existsSync(f));
    const bin = path.join(story.root, 'read-only-git');
    fs.mkdirSync(bin);
    fs.writeFileSync(
      path.join(bin, 'git'),
      `#!/bin/sh\ncase " $* " in *" hash-object "*"-w "* | *" update-index "*"--add "*) echo "error: unable to create temporary file: Read-only file system" >&2; exit 128;; esac\nexec ${realGit} "$@"\n`,
      { mode: 0o755 },
    );
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    const env = { ...story.env, PATH: bin };
    for (const run of [
      cli(story, dir, ['check', 'src/a.ts', 'src/new.ts'], env),
      cli(story, dir, ['check', 'src/a.ts', 'src/new.ts']),
    ]) {
      expect(run.code, run.stderr).toBe(1);
      expect(run.stdout).toMatch(/^PROMOTED +src\/a\.ts$/m);
      expect(run.stdout).toContain('NOT PROMOTED  src/new.ts');
    }

    // Approved content this store does not hold (its record came from elsewhere): judged from the work tree (fc
    // audit f05: "its content could not be read", exit 1).
    writeFiles(dir, { 'src/elsewhere.ts': 'export const e = 1;\n' });
    cliOk(story, dir, ['attest', '--approve', 'src/elsewhere.ts', '--yes']);
    const blob = gitOk(story, dir, ['hash-object', 'src/elsewhere.ts']);
    fs.rmSync(path.join(dir, '.git', 'objects', blob.slice(0, 2), blob.slice(2)));
    fs.rmSync(path.join(dir, '.git', 'delegate-git', 'cache'), { recursive: true, force: true });
    const unstored = cli(story, dir, ['check', 'src/elsewhere.ts'], env);
    expect(unstored.code, unstored.stdout + unstored.stderr).toBe(0);
    expect(unstored.stdout).toMatch(/^PROMOTED +src\/elsewhere\.ts$/m);
  });
});

describe('check with nothing staged (ux57 f15)', () => {
  it('says that nothing governed is staged and how to ask about the last commit; control: a governed file staged, it does not', () => {
    const dir = copyWorkTree(story, base, 'check-nothing-staged');
    const nothing = cli(story, dir, ['check']);
    expect(nothing.code).toBe(0);
    expect(nothing.stdout).toContain('0 governed file(s)');
    expect(nothing.stdout).toContain(
      'Nothing governed is staged (check judges the staged changes by default)',
    );
    writeFiles(dir, { 'src/b.ts': 'export const b = 2;\n' });
    gitOk(story, dir, ['add', 'src/b.ts']);
    const staged = cli(story, dir, ['check']);
    expect(staged.code).toBe(1);
    expect(staged.stdout).not.toContain('Nothing governed is staged');
  });
});

describe('check --json', () => {
  let dir: string;
  beforeAll(() => {
    dir = copyWorkTree(story, base, 'check');
    writeFiles(dir, { 'src/b.ts': 'export const b = 2;\n', 'README.md': 'hello\n' });
  });

  it('--path: one result per path with path, promoted, reason, by, governed; exitCode matches the exit', () => {
    const run = cli(story, dir, ['check', '--path', 'src/a.ts', '--path', 'src/b.ts', 'README.md', '--json']);
    expect(run.code).toBe(1);
    const out = json<CheckJson>(run);
    expect(out.exitCode).toBe(1);
    expect(Object.keys(out).sort()).toEqual(['deletions', 'exitCode', 'mode', 'results']);
    const byPath = Object.fromEntries(out.results.map((r) => [r.path, r]));
    expect(Object.keys(byPath['src/a.ts']!).sort()).toEqual(
      ['by', 'gitBlob', 'governed', 'path', 'promoted', 'reason', 'sha256'].sort(),
    );
    expect(byPath['src/a.ts']).toMatchObject({
      promoted: true,
      governed: true,
      by: [OPERATOR],
      gitBlob: blobA,
    });
    expect(byPath['src/a.ts']!.sha256).toBe(subjectOf('src/a.ts', 'export const a = 1;\n').sha256);
    expect(byPath['src/b.ts']).toMatchObject({ promoted: false, governed: true, by: [] });
    expect(byPath['src/b.ts']!.reason).toMatch(/^no verdict/);
    expect(byPath['README.md']).toMatchObject({ promoted: false, governed: false });

    // Control: the promoted file alone passes.
    const alone = cli(story, dir, ['check', '--path', 'src/a.ts', '--json']);
    expect(alone.code).toBe(0);
    expect(json<CheckJson>(alone).exitCode).toBe(0);
  });

  it('--path naming no file (a typo) cannot be answered: exit 2, said as such, not "not governed"; the promoted file beside it passes alone', () => {
    const run = cli(story, dir, ['check', 'src/a.tss', 'src/a.ts']);
    expect(run.code).toBe(2);
    expect(run.stdout).toContain('NO FILE       src/a.tss');
    expect(run.stdout).toContain('it is not a file in the work tree');
    expect(run.stdout).not.toContain('not governed');
    // A directory is named as one, with how to name its files (fc audit f07).
    const directory = cli(story, dir, ['check', '--path', 'src']);
    expect(directory.code).toBe(2);
    expect(directory.stdout).toContain(
      'it is a directory, and check judges files: name them (git ls-files -z -- src | xargs -0 delegate-git check --)',
    );
    // A governed file that is not there is counted apart, never as promoted (rt50 f03).
    fs.renameSync(path.join(dir, 'src/a.ts'), path.join(dir, 'src/a.ts.aside'));
    const gone = cli(story, dir, ['check', 'src/a.ts']);
    fs.renameSync(path.join(dir, 'src/a.ts.aside'), path.join(dir, 'src/a.ts'));
    expect(gone.code).toBe(2);
    expect(gone.stdout).toContain('1 governed file(s): 0 promoted, 0 refused, 1 not there');
    const asJson = json<CheckJson>(cli(story, dir, ['check', 'src/a.tss', '--json']));
    expect(asJson.exitCode).toBe(2);
    expect(asJson.results[0]).toMatchObject({ path: 'src/a.tss', absent: true, promoted: false });
    expect(cli(story, dir, ['check', 'src/a.ts']).code).toBe(0);
  });

  it('--rev: every governed file in the tree; refused once an unpromoted file is committed', () => {
    const clean = cli(story, dir, ['check', '--rev', 'HEAD', '--json']);
    expect(clean.code).toBe(0);
    expect(
      json<CheckJson>(clean)
        .results.map((r) => r.path)
        .sort(),
    ).toEqual([KEY_FILE, POLICY_PATH, 'src/a.ts']);

    gitOk(story, dir, ['add', 'src/b.ts']);
    gitOk(story, dir, ['commit', '-q', '--no-verify', '-m', 'b past the hook']);
    const refused = cli(story, dir, ['check', '--rev', 'HEAD', '--json']);
    expect(refused.code).toBe(1);
    const out = json<CheckJson>(refused);
    expect(out.exitCode).toBe(1);
    expect(out.results.filter((r) => !r.promoted).map((r) => r.path)).toEqual(['src/b.ts']);
    expect(cli(story, dir, ['check', '--rev', 'HEAD~1', '--json']).code).toBe(0);
  });

  it('inside the git directory, --staged says there is no work tree there (exit 2); --rev works there', () => {
    const gitDir = path.join(dir, '.git');
    const staged = cli(story, gitDir, ['check', '--staged']);
    expect(staged.code).toBe(2);
    expect(staged.stderr).toContain('inside the git directory, not the work tree');
    expect(cli(story, gitDir, ['check', '--rev', 'HEAD~1']).code).toBe(0);
  });
});

interface ShowJson {
  target: string;
  blob: string;
  records: Array<{
    valid: boolean;
    reason: string;
    signer: string | null;
    kind: string;
    outcome: string;
    createdAt: string;
  }>;
}

describe('a ledger ref that names no notes commit', () => {
  it('stops the hook, verify, log and attest with exit 2 and how to repair it, instead of reading no ledger', () => {
    const dir = copyWorkTree(story, base, 'damaged');
    const tip = refTip(story, dir, LEDGER)!;
    const blob = gitOk(story, dir, ['hash-object', '-w', '--', POLICY_PATH]);
    gitOk(story, dir, ['update-ref', LEDGER, blob]);
    const repair = `${LEDGER} points to a blob (${blob.slice(0, 12)}), not a notes commit`;

    writeFiles(dir, { 'src/z.ts': 'export const z = 1;\n' });
    gitOk(story, dir, ['add', 'src/z.ts']);
    const committed = commit(story, dir, 'while the ledger is damaged');
    expect(committed.code).not.toBe(0);
    expect(committed.stderr).toContain(repair);
    for (const args of [['verify'], ['log'], ['attest', '--approve', 'src/z.ts', '--yes']]) {
      const run = cli(story, dir, args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr, args.join(' ')).toContain(repair);
      expect(run.stderr).toContain('git reflog show');
    }

    gitOk(story, dir, ['update-ref', LEDGER, tip]); // control: repaired as the message says
    expect(cli(story, dir, ['verify']).code).toBe(0);
    expect(cli(story, dir, ['log']).stdout).toContain('src/a.ts');
  });

  it('a ledger ref naming an object that is gone stops show and check too; control: a clone with no ledger shows none', () => {
    const dir = copyWorkTree(story, base, 'gone');
    const gone = 'deadbeef'.repeat(5);
    // update-ref refuses a missing object: written as git's files backend stores a ref.
    fs.writeFileSync(path.join(dir, '.git', ...LEDGER.split('/')), `${gone}\n`);
    for (const args of [
      ['show', 'src/a.ts'],
      ['check', 'src/a.ts'],
    ]) {
      const run = cli(story, dir, args);
      expect(run.code, `${args.join(' ')}: ${run.stdout}`).toBe(2);
      expect(run.stderr).toContain(`${LEDGER} points to a missing object (${gone.slice(0, 12)})`);
    }
    fs.rmSync(path.join(dir, '.git', ...LEDGER.split('/')));
    const none = cli(story, dir, ['show', 'src/a.ts']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toContain('0 record(s)');
  });

  it('a ledger ref file a crash cut short (empty, or no object id) is damage to the hook and every reader, not "no ledger": a path governed only by its records is not let through (rt46 f01); control: repaired as the message says', () => {
    const dir = copyWorkTree(story, base, 'cut-short');
    writeFiles(dir, { 'lib/l.ts': 'export const l = 1;\n' });
    cliOk(story, dir, ['attest', '--approve', 'lib/l.ts', '--yes']); // outside protect: governed by its record
    gitOk(story, dir, ['add', 'lib/l.ts']);
    expect(commit(story, dir, 'l, approved').code).toBe(0);
    const tip = refTip(story, dir, LEDGER)!;
    const refFile = path.join(dir, '.git', ...LEDGER.split('/'));
    writeFiles(dir, { 'lib/l.ts': 'export const l = 2;\n' });
    gitOk(story, dir, ['add', 'lib/l.ts']);
    // Control: with the ledger readable, the edit is refused as unpromoted (exit 1).
    expect(cli(story, dir, ['check', '--staged']).code).toBe(1);

    for (const cutShort of ['', 'not an object id\n']) {
      fs.writeFileSync(refFile, cutShort);
      const committed = commit(story, dir, 'while the ledger ref is cut short');
      expect(committed.code).not.toBe(0);
      expect(committed.stderr).toContain(`${LEDGER} is damaged: git cannot read what it names`);
      for (const args of [
        ['check', '--staged'],
        ['verify'],
        ['log'],
        ['show', 'lib/l.ts'],
        ['attest', '--approve', 'lib/l.ts', '--yes'],
      ]) {
        const run = cli(story, dir, args);
        expect(run.code, `${args.join(' ')}: ${run.stdout}`).toBe(2);
        expect(run.stderr, args.join(' ')).toContain(`its file ${refFile} holds no object id`);
        expect(run.stderr).toContain(`git reflog show ${LEDGER}`);
      }
    }
    // Repaired as the message says: the file removed, the ref pointed back at its last commit.
    fs.rmSync(refFile);
    gitOk(story, dir, ['update-ref', LEDGER, tip]);
    expect(cli(story, dir, ['check', '--staged']).code).toBe(1);
    expect(cli(story, dir, ['verify']).code).toBe(0);
  });

  it('with no ledger, a tag git would read in its place (refs/tags/refs/notes/delegations) is no ledger to any reader or writer', () => {
    const dir = copyWorkTree(story, base, 'shadowed');
    const tip = refTip(story, dir, LEDGER)!;
    gitOk(story, dir, ['update-ref', '-d', LEDGER]);
    gitOk(story, dir, ['update-ref', `refs/tags/${LEDGER}`, tip]);
    expect(gitOk(story, dir, ['rev-parse', LEDGER])).toBe(tip); // git's own reading of the name
    const shown = cli(story, dir, ['show', 'src/a.ts']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('0 record(s)');
    cliOk(story, dir, ['attest', '--approve', 'src/a.ts', '--yes']);
    const ledger = refTip(story, dir, LEDGER)!;
    expect(gitRun(story, dir, ['rev-parse', '--verify', '-q', `${ledger}^`]).code).not.toBe(0); // a new root
    // Control: the ledger itself, once there, is read (the tag beside it changes nothing).
    const again = cli(story, dir, ['show', 'src/a.ts']);
    expect(again.stdout).toContain('1 record(s)');
  });

  it('a ledger ref set to a tag of its own notes commit is damage to every reader, as it is to the hook; control: pointed back, all read it', () => {
    const dir = copyWorkTree(story, base, 'tagged');
    const tip = refTip(story, dir, LEDGER)!;
    const tag = tagOf(story, dir, tip);
    gitOk(story, dir, ['update-ref', LEDGER, tag]);
    const readers = [
      ['check', '--staged'],
      ['check', 'src/a.ts'],
      ['verify'],
      ['log'],
      ['show', 'src/a.ts'],
      ['report'],
    ];
    for (const args of readers) {
      const run = cli(story, dir, args);
      expect(run.code, `${args.join(' ')}: ${run.stdout}`).toBe(2);
      expect(run.stderr).toContain(`${LEDGER} points to a tag (${tag.slice(0, 12)}), not a notes commit`);
    }
    gitOk(story, dir, ['update-ref', LEDGER, tip]);
    for (const args of readers) {
      const run = cli(story, dir, args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    }
  });
});

describe('show', () => {
  it('decodes and verifies each record on a path or a blob (as git names one); a stranger-signed line shows as invalid', () => {
    const dir = copyWorkTree(story, base, 'show');
    const byPath = json<ShowJson>(cliOk(story, dir, ['show', 'src/a.ts', '--json']));
    expect(byPath).toMatchObject({ target: 'src/a.ts', blob: blobA });
    expect(byPath.records).toEqual([
      expect.objectContaining({
        valid: true,
        reason: 'signature verified',
        signer: OPERATOR,
        kind: 'verdict',
        outcome: 'UNIT_PASSED',
      }),
    ]);
    const byBlob = json<ShowJson>(cliOk(story, dir, ['show', blobA, '--json']));
    expect(byBlob).toEqual({ ...byPath, target: blobA });
    // As git names a blob: abbreviated, or by stage (or revision) and path.
    expect(json<ShowJson>(cliOk(story, dir, ['show', blobA.slice(0, 10), '--json']))).toEqual({
      ...byPath,
      target: blobA.slice(0, 10),
    });
    gitOk(story, dir, ['add', 'src/a.ts']);
    expect(json<ShowJson>(cliOk(story, dir, ['show', ':src/a.ts', '--json'])).blob).toBe(blobA);
    // Relative to where the user stands, as git reads it; a name no file system holds goes to git, not to a stack trace.
    expect(json<ShowJson>(cliOk(story, path.join(dir, 'src'), ['show', ':./a.ts', '--json'])).blob).toBe(
      blobA,
    );
    const long = cli(story, dir, ['show', `HEAD:${'x'.repeat(300)}`]);
    expect(long.code).toBe(2);
    expect(long.stderr).toContain('is neither a file in the work tree nor a blob git knows here');
    for (const unknown of ['0'.repeat(40), 'src/gone.ts', 'HEAD']) {
      const missing = cli(story, dir, ['show', unknown]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain(
        `${unknown} is neither a file in the work tree nor a blob git knows here`,
      );
    }

    const policyId = JSON.parse(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8')).repositoryId as string;
    const stranger = testKey({ name: 'mallory', roles: ['delegator'] });
    const line = verdictLine(stranger, [subjectOf('src/a.ts', 'export const a = 1;\n')], {
      repositoryId: policyId,
    });
    gitOk(story, dir, ['notes', '--ref=delegations', 'append', '-m', line, blobA]);
    expect(noteLines(story, dir, blobA)).toHaveLength(2);

    const after = json<ShowJson>(cliOk(story, dir, ['show', 'src/a.ts', '--json']));
    expect(after.records).toHaveLength(2);
    expect(after.records).toContainEqual(
      expect.objectContaining({
        valid: false,
        signer: null,
        reason: expect.stringMatching(/^signed by a key that is not in the trust root/),
      }),
    );
    const text = cliOk(story, dir, ['show', 'src/a.ts']).stdout;
    expect(text).toContain(`src/a.ts (blob ${blobA}): 2 record(s)`);
    expect(text).toMatch(/^ {2}valid {4}verdict UNIT_PASSED {2}by alice {2}at /m);
    expect(text).toMatch(/^ {2}INVALID {2}verdict UNIT_PASSED {2}by unknown key {2}at /m);

    // A file with no record: nothing to show, and that is not an error.
    writeFiles(dir, { 'src/new.ts': 'new\n' });
    expect(json<ShowJson>(cliOk(story, dir, ['show', 'src/new.ts', '--json'])).records).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// What every command owes its user.

interface CommandCase {
  /** An invocation that reaches the command's work. */
  args: string[];
  /** Needs a git repository (so: git, and exit 2 outside one). */
  repository: boolean;
  /** Reads the policy (a corrupt one is exit 2). */
  policy: boolean;
  /** Loads the operator's signing key. */
  signs: boolean;
}

const UNIT = 'unit.json';
const RECORDING = 'recording.json';

/** Every command in main.ts; a new command fails the test below until it is described here. */
const CASES: Record<string, CommandCase> = {
  init: { args: ['init', '--protect', 'src/**'], repository: true, policy: true, signs: true },
  keygen: { args: ['keygen', 'matrix-key'], repository: false, policy: false, signs: false },
  keys: { args: ['keys', 'list'], repository: true, policy: true, signs: false },
  check: { args: ['check', '--rev', 'HEAD'], repository: true, policy: true, signs: false },
  show: { args: ['show', 'src/a.ts'], repository: true, policy: true, signs: false },
  log: { args: ['log'], repository: true, policy: true, signs: false },
  report: { args: ['report'], repository: true, policy: true, signs: false },
  attest: {
    args: ['attest', '--approve', 'src/a.ts', '--key', OPERATOR, '--yes'],
    repository: true,
    policy: true,
    signs: true,
  },
  hook: { args: ['hook', 'pre-commit'], repository: true, policy: true, signs: false },
  sync: { args: ['sync'], repository: true, policy: false, signs: false },
  verify: { args: ['verify'], repository: true, policy: true, signs: false },
  delegate: { args: ['delegate', UNIT, '--key', OPERATOR], repository: true, policy: true, signs: true },
  config: { args: ['config', 'get'], repository: true, policy: false, signs: false },
  worker: { args: ['worker', 'replay', RECORDING], repository: false, policy: false, signs: false },
  scan: { args: ['scan', UNIT], repository: false, policy: false, signs: false },
};

/** The commands main.ts dispatches to, read from its source. */
function dispatchedCommands(): string[] {
  const source = fs.readFileSync(path.join(repoRoot, 'packages', 'cli', 'src', 'main.ts'), 'utf8');
  return [...source.matchAll(/^\s+([a-z-]+): \(\) => import\('\.\/commands\//gm)].map((m) => m[1]!);
}

/** Arguments resolved against a directory holding the unit and the recording. */
function argsIn(dir: string, args: string[]): string[] {
  return args.map((a) => (a === UNIT || a === RECORDING ? path.join(dir, a) : a));
}

const names = Object.keys(CASES);
const repoCommands = names.filter((n) => CASES[n]!.repository);

describe('every command', () => {
  let outside: string;
  let inside: string;
  beforeAll(() => {
    outside = path.join(story.root, 'not-a-repository');
    fs.mkdirSync(outside);
    inside = copyWorkTree(story, base, 'matrix');
    for (const dir of [outside, inside]) {
      writeFiles(dir, {
        [UNIT]: JSON.stringify({ taskName: 't', instruction: 'write b', targetFiles: ['src/b.ts'] }),
        [RECORDING]: JSON.stringify({ replies: [{ content: 'nothing' }] }),
      });
    }
  });

  it('is described here (the list is read from main.ts)', () => {
    expect(dispatchedCommands().sort()).toEqual([...names].sort());
  });

  it('--help exits 0 with usage and an example', async () => {
    const runs = await runAll(names.map((n) => ({ cwd: outside, args: [n, '--help'] })));
    runs.forEach((run, i) => {
      expect(run.code, names[i]).toBe(0);
      expect(run.stdout, names[i]).toContain(`Usage: delegate-git ${names[i]}`);
      expect(run.stdout, names[i]).toContain('Example');
    });
  });

  it('an unknown flag exits 2 naming the flag and the command help', async () => {
    const runs = await runAll(
      names.map((n) => ({ cwd: inside, args: [...argsIn(inside, CASES[n]!.args), '--no-such-flag'] })),
    );
    runs.forEach((run, i) => {
      expect(run.code, `${names[i]}: ${run.stderr}`).toBe(2);
      expect(run.stderr, names[i]).toContain("Unknown option '--no-such-flag'");
      expect(run.stderr, names[i]).toContain(`Run \`delegate-git ${names[i]} --help\``);
      expect(run.stderr, names[i]).not.toContain('To specify a positional argument');
    });
  });

  it("`help <command>` shows that command's help, as git does; a bad option value is one paragraph; exclusive flags are refused", () => {
    const help = cli(story, outside, ['help', 'sync']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: delegate-git sync');
    expect(cli(story, outside, ['help']).stdout).toContain('Usage: delegate-git <command>');
    for (const name of ['nosuch', 'constructor', '__proto__']) {
      const unknown = cli(story, outside, ['help', name]);
      expect(unknown.code, unknown.stderr).toBe(2);
      expect(unknown.stderr).toBe(
        `delegate-git: unknown command "${name}". Run \`delegate-git --help\` for the list of commands.\n`,
      );
      expect(cli(story, outside, [name]).code).toBe(2);
    }
    const dangling = cli(story, inside, ['log', '-n', '-1']);
    expect(dangling.code).toBe(2);
    expect(dangling.stderr.trim().split('\n')).toHaveLength(1);
    expect(dangling.stderr).not.toContain('\\u000a');
    expect(dangling.stderr).toContain("for '-n'? To specify");
    const both = cli(story, inside, ['verify', '--json', '--markdown']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('Choose one of --json or --markdown.');
  });

  it('log -n 0 shows nothing and says nothing false; report --html refuses a directory that does not exist, creating none, and replaces only a report of its own', () => {
    const none = cli(story, inside, ['log', '-n', '0']);
    expect(none.code).toBe(0);
    expect(none.stdout).toBe('');
    expect(cli(story, inside, ['log', '-n', '1']).stdout).not.toBe('');
    const missing = path.join(inside, 'typo', 'deep', 'r.html');
    const refused = cli(story, inside, ['report', '--html', missing]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`The directory ${path.dirname(missing)} does not exist`);
    expect(fs.existsSync(path.join(inside, 'typo'))).toBe(false);
    const written = cli(story, inside, ['report', '--html', path.join(inside, 'r.html')]);
    expect(written.code, written.stderr).toBe(0);
    expect(fs.existsSync(path.join(inside, 'r.html'))).toBe(true);
    // A report written before is replaced (control); a file of the user's, or a directory, is not.
    fs.writeFileSync(
      path.join(inside, 'r.html'),
      fs.readFileSync(path.join(inside, 'r.html'), 'utf8').replace('<body', '<!-- old --><body'),
    );
    expect(cli(story, inside, ['report', '--html', 'r.html']).code).toBe(0);
    expect(fs.readFileSync(path.join(inside, 'r.html'), 'utf8')).not.toContain('<!-- old -->');
    fs.writeFileSync(path.join(inside, 'notes.html'), '<p>mine</p>\n');
    const mine = cli(story, inside, ['report', '--html', 'notes.html']);
    expect(mine.code).toBe(2);
    expect(mine.stderr).toContain('notes.html exists and is not an HTML report delegate-git wrote');
    expect(fs.readFileSync(path.join(inside, 'notes.html'), 'utf8')).toBe('<p>mine</p>\n');
    expect(cli(story, inside, ['report', '--html', '.']).code).toBe(2);
    const empty = cli(story, inside, ['report', '--html', '']);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('--html needs a file name');
  });

  it('outside a git repository exits 2 saying so; keygen needs no repository', async () => {
    // The search for a repository stops at the story's root, wherever the temporary directory is.
    const env = { ...story.env, GIT_CEILING_DIRECTORIES: story.root };
    const runs = await runAll(
      repoCommands.map((n) => ({ cwd: outside, args: argsIn(outside, CASES[n]!.args), env })),
    );
    runs.forEach((run, i) => {
      expect(run.code, `${repoCommands[i]}: ${run.stdout}${run.stderr}`).toBe(2);
      expect(run.stderr).toBe(
        `delegate-git ${repoCommands[i]}: ${outside} is not inside a git repository. Run this in a git repository (or \`git init\` first).\n`,
      );
    });
    expect(fs.readdirSync(outside).sort()).toEqual([RECORDING, UNIT]);
    expect(cli(story, outside, ['keygen', 'outside-key'], operatorEnv(story, 'outside')).code).toBe(0);
  });

  it('without git on PATH exits 2 with the install hint; control: the same repository with git passes', async () => {
    // Only a link to node: node's own directory (often /usr/bin) may hold git too.
    const bin = path.join(story.root, 'node-only-bin');
    fs.mkdirSync(bin);
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    const env = { ...story.env, PATH: bin };
    // The pre-commit hook answers a commit that stages nothing governed from the index file alone (quiet-commit.ts),
    // which needs no git: it is asked here with a governed file staged, which only the full check answers.
    const dir = copyWorkTree(story, inside, 'no-git');
    writeFiles(dir, { 'src/staged.ts': 'export {};\n' });
    gitOk(story, dir, ['add', 'src/staged.ts']);
    const runs = await runAll(
      repoCommands.map((n) => ({ cwd: dir, args: argsIn(inside, CASES[n]!.args), env })),
    );
    runs.forEach((run, i) => {
      expect(run.code, `${repoCommands[i]}: ${run.stdout}${run.stderr}`).toBe(2);
      expect(run.stderr, repoCommands[i]).toContain('git is not installed or not on PATH');
      expect(run.stderr, repoCommands[i]).toContain('Install git (https://git-scm.com/downloads)');
    });
    expect(cli(story, dir, ['check', '--rev', 'HEAD']).code).toBe(0);
  });

  it('with a git older than 2.31 exits 2 saying so; control: the same git reporting a newer version is a bare failure', () => {
    // git before 2.31 prints `--path-format=absolute` back as an argument rather than failing on it.
    const fakeGit = (version: string) => {
      const bin = path.join(story.root, `git-${version}`);
      fs.mkdirSync(bin, { recursive: true });
      fs.writeFileSync(
        path.join(bin, 'git'),
        `#!/bin/sh\n[ "$1" = --version ] && { echo "git version ${version}"; exit 0; }\n` +
          `[ "$1" = rev-parse ] && { printf -- '--path-format=absolute\\nfalse\\ntrue\\n.git\\n.git\\n\\n'; exit 0; }\n` +
          'exit 1\n',
        { mode: 0o755 },
      );
      fs.symlinkSync(process.execPath, path.join(bin, 'node'));
      return { ...story.env, PATH: bin };
    };
    const old = cli(story, inside, ['log'], fakeGit('2.30.2'));
    expect(old.code).toBe(2);
    expect(old.stderr).toContain(
      'delegate-git needs git 2.31 or newer, and the git on PATH is older (git version 2.30.2)',
    );
    const newer = cli(story, inside, ['log'], fakeGit('2.45.0'));
    expect(newer.code).toBe(2);
    expect(newer.stderr).not.toContain('2.31 or newer');
    expect(newer.stderr).toContain('unexpected output');
  });

  it('an unusable DELEGATE_GIT_SIGNING_KEY stops every command that signs (exit 2); commands that do not sign ignore it', async () => {
    const dir = copyWorkTree(story, base, 'bad-signing-key');
    const signers = names.filter((n) => CASES[n]!.signs);
    const garbage = { ...story.env, DELEGATE_GIT_SIGNING_KEY: 'not a key at all' };
    const runs = await runAll(
      signers.map((n) => ({ cwd: dir, args: argsIn(inside, CASES[n]!.args), env: garbage })),
    );
    runs.forEach((run, i) => {
      expect(run.code, `${signers[i]}: ${run.stdout}${run.stderr}`).toBe(2);
      expect(run.stderr, signers[i]).toContain(
        'the DELEGATE_GIT_SIGNING_KEY environment variable is neither a PKCS#8 PEM private key nor the standard base64 of a 32-byte Ed25519 seed',
      );
    });
    const damagedPem = {
      ...story.env,
      DELEGATE_GIT_SIGNING_KEY: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
    };
    const pem = cli(story, dir, ['attest', '--approve', 'src/a.ts', '--yes'], damagedPem);
    expect(pem.code).toBe(2);
    expect(pem.stderr).toContain('could not be read as a PKCS#8 private key');
    expect(refTip(story, dir, LEDGER)).toBe(refTip(story, base, LEDGER));

    // Controls: gates never sign; and the operator's real key in the variable signs.
    expect(cli(story, dir, ['check', '--rev', 'HEAD'], garbage).code).toBe(0);
    expect(cli(story, dir, ['verify'], garbage).code).toBe(0);
    const realKey = fs.readFileSync(path.join(keyDir(), `${OPERATOR}.key`), 'utf8');
    const signed = cli(story, dir, ['attest', '--approve', 'src/a.ts', '--yes'], {
      ...story.env,
      DELEGATE_GIT_SIGNING_KEY: realKey,
    });
    expect(signed.code, signed.stderr).toBe(0);
    expect(refTip(story, dir, LEDGER)).not.toBe(refTip(story, base, LEDGER));
  });

  it("init with no USER (a container, cron) names the key after the account, not 'me' (docs audit d06); control: USER names it", () => {
    const { USER: _, USERNAME: __, ...env } = story.env;
    const account = cliOk(story, makeWorkTree(story, 'init-no-user'), ['init'], {
      ...env,
      XDG_CONFIG_HOME: path.join(story.root, 'xdg-no-user'),
    });
    expect(account.stdout + account.stderr).toContain(`.delegate-git/keys/${os.userInfo().username}.json`);
    const named = cliOk(story, makeWorkTree(story, 'init-user'), ['init'], {
      ...env,
      USER: 'quinn',
      XDG_CONFIG_HOME: path.join(story.root, 'xdg-user'),
    });
    expect(named.stdout + named.stderr).toContain('.delegate-git/keys/quinn.json');
  });

  it('init with an unusable signing key leaves nothing behind, so the next run still writes and approves the anchor', () => {
    const dir = makeWorkTree(story, 'init-bad-key');
    const failed = cli(story, dir, ['init', '--protect', 'src/**'], {
      ...story.env,
      DELEGATE_GIT_SIGNING_KEY: 'garbage',
    });
    expect(failed.code).toBe(2);
    expect(fs.existsSync(path.join(dir, POLICY_PATH))).toBe(false);
    expect(refTip(story, dir, LEDGER)).toBeNull();

    cliOk(story, dir, ['init', '--protect', 'src/**']);
    gitOk(story, dir, ['add', '.delegate-git']);
    const adopted = commit(story, dir, 'Adopt');
    expect(adopted.code, adopted.stderr).toBe(0);
  });

  it('init stopped after writing the policy and key file but before approving them is finished by the next run', () => {
    const dir = makeWorkTree(story, 'init-interrupted');
    cliOk(story, dir, ['init', '--protect', 'src/**']);
    // As if it had been killed before the approval reached the ledger.
    gitOk(story, dir, ['update-ref', '-d', LEDGER]);
    gitOk(story, dir, ['add', '.delegate-git']);
    expect(commit(story, dir, 'Adopt, unapproved').code).not.toBe(0);
    gitOk(story, dir, ['reset', '-q']);

    const again = cliOk(story, dir, ['init']);
    expect(again.stdout).toContain(
      `kept ${POLICY_PATH}, written here and not committed yet, as the one to adopt`,
    );
    gitOk(story, dir, ['add', '.delegate-git']);
    const adopted = commit(story, dir, 'Adopt');
    expect(adopted.code, adopted.stderr).toBe(0);
    // Control: committed, the policy is kept as it is and nothing more is approved.
    const tip = refTip(story, dir, LEDGER);
    expect(cliOk(story, dir, ['init']).stdout).toContain(`kept the existing ${POLICY_PATH}`);
    expect(refTip(story, dir, LEDGER)).toBe(tip);
  });

  it('the advice for a broken staged policy works: followed as written, the committed policy is back (rt49 f02)', () => {
    const dir = copyWorkTree(story, base, 'staged-broken-policy');
    const committed = fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8');
    fs.writeFileSync(path.join(dir, POLICY_PATH), '{"version": 1,');
    gitOk(story, dir, ['add', POLICY_PATH]);
    const refused = cli(story, dir, ['check', '--staged']);
    expect(refused.code).toBe(2);
    const advice = /`git (restore [^`]+)`/.exec(refused.stderr)?.[1];
    expect(advice, refused.stderr).toBeDefined();
    gitOk(story, dir, advice!.split(' '));
    const after = cli(story, dir, ['check', '--staged']);
    expect(after.code, after.stderr).toBe(0);
    expect(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8')).toBe(committed);
  });

  it('a corrupt policy exits 2 naming it for every command that reads it; control: the intact copy does not', async () => {
    const corrupt = copyWorkTree(story, base, 'corrupt-policy');
    fs.writeFileSync(path.join(corrupt, POLICY_PATH), '{"version": 1,');
    gitOk(story, corrupt, ['add', POLICY_PATH]);
    gitOk(story, corrupt, ['commit', '-q', '--no-verify', '-m', 'break the policy']);
    const intact = copyWorkTree(story, base, 'intact-policy');
    const readers = names.filter((n) => CASES[n]!.policy);
    // check judges the index, the work tree or a commit: each reads the policy from there.
    const invocations = [
      ...readers.map((n) => argsIn(inside, CASES[n]!.args)),
      ['check'],
      ['check', '--path', 'src/a.ts'],
    ];
    // The control's delegate must fail at the worker (a closed port), not at the policy.
    const env = { ...story.env, DELEGATE_GIT_WORKER_ENDPOINT: 'http://127.0.0.1:9/v1' };
    const [broken, controls] = await Promise.all([
      runAll(
        invocations.map((args) => ({ cwd: corrupt, args, env })),
        2,
      ),
      runAll(
        invocations.map((args) => ({ cwd: intact, args, env })),
        2,
      ),
    ]);
    invocations.forEach((args, i) => {
      const what = args.slice(0, 2).join(' ');
      expect(broken[i]!.code, `${what}: ${broken[i]!.stdout}${broken[i]!.stderr}`).toBe(2);
      expect(broken[i]!.stderr, what).toMatch(/\.delegate-git\/policy\.json( \([^)]+\))? is not valid JSON/);
      expect(controls[i]!.code, `${what} (control): ${controls[i]!.stderr}`).not.toBe(2);
      expect(controls[i]!.stderr, what).not.toContain('is not valid JSON');
    });
  });
});

describe('a sparse checkout that leaves .delegate-git out of the work tree', () => {
  it('reads the policy and keys from the index, as the checkout holds them; control: a repository never adopted is sent to init', async () => {
    const sparse = copyWorkTree(story, base, 'sparse-cone');
    // The copy's index holds the original's file times: refreshed, git knows the files are unchanged and removes them.
    gitOk(story, sparse, ['update-index', '-q', '--refresh']);
    gitOk(story, sparse, ['sparse-checkout', 'set', '--cone', 'src']);
    expect(fs.existsSync(path.join(sparse, '.delegate-git'))).toBe(false);
    const checked = cli(story, sparse, ['check', '--path', 'src/a.ts']);
    expect(checked.code, checked.stderr).toBe(0);
    expect(checked.stdout).toContain('PROMOTED      src/a.ts');
    expect(checked.stdout).toContain(
      '(policy and trust root from the sparse checkout (the index for what it leaves out))',
    );
    for (const args of [['log', 'src/a.ts'], ['show', 'src/a.ts'], ['report']]) {
      const run = cli(story, sparse, args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    }
    writeFiles(sparse, { 'src/b.ts': 'export const b = 1;\n' });
    const approved = cli(story, sparse, ['attest', '--approve', 'src/b.ts', '--yes']);
    expect(approved.code, approved.stderr).toBe(0);
    expect(cli(story, sparse, ['check', '--path', 'src/b.ts']).code).toBe(0);

    // Only the keys left out: the policy from the work tree, the keys from the index.
    gitOk(story, sparse, ['sparse-checkout', 'set', '--no-cone', '/src/', `/${POLICY_PATH}`]);
    expect(fs.existsSync(path.join(sparse, POLICY_PATH))).toBe(true);
    expect(fs.existsSync(path.join(sparse, KEY_FILE))).toBe(false);
    const keysOut = cli(story, sparse, ['check', '--path', 'src/a.ts']);
    expect(keysOut.code, keysOut.stderr).toBe(0);
    // init there finds the key it signs with in the trust root, not a newcomer's to be added by a reviewer.
    const again = cli(story, sparse, ['init']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`your key is already in ${KEY_FILE}`);
    expect(again.stdout).not.toContain('keys add');

    const never = makeWorkTree(story, 'never-adopted');
    writeFiles(never, { 'src/a.ts': 'export const a = 1;\n' });
    const refused = cli(story, never, ['check', '--path', 'src/a.ts']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('Run `delegate-git init`');
  });

  it('keys list reads the keys from the index; keys add and revoke, which edit them, say to add them to the checkout (control: added, they work)', () => {
    const sparse = copyWorkTree(story, base, 'sparse-keys');
    gitOk(story, sparse, ['update-index', '-q', '--refresh']);
    gitOk(story, sparse, ['sparse-checkout', 'set', '--cone', 'src']);
    expect(fs.existsSync(path.join(sparse, '.delegate-git'))).toBe(false);
    const listed = cli(story, sparse, ['keys', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${OPERATOR} +[0-9a-f]{16} `, 'm'));

    const bob = testKey({ name: 'bob', roles: ['reviewer'] });
    const add = ['keys', 'add', 'bob', '--public-key', bob.keyFile.publicKey, '--roles', 'reviewer'];
    const steps = [add, ['keys', 'revoke', OPERATOR]];
    for (const args of steps) {
      const run = cli(story, sparse, args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toContain(`This sparse checkout leaves ${POLICY_PATH} out of the work tree`);
      expect(run.stderr).toContain('`git sparse-checkout add .delegate-git`');
    }
    expect(fs.existsSync(path.join(sparse, '.delegate-git'))).toBe(false);

    // Only the keys left out: the policy is here, and so is the refusal, now naming the key files.
    gitOk(story, sparse, ['sparse-checkout', 'set', '--no-cone', '/src/', `/${POLICY_PATH}`]);
    const keysOut = cli(story, sparse, add);
    expect(keysOut.code).toBe(2);
    expect(keysOut.stderr).toContain('leaves key files in .delegate-git/keys out of the work tree');
    expect(fs.existsSync(path.join(sparse, '.delegate-git/keys/bob.json'))).toBe(false);

    gitOk(story, sparse, ['sparse-checkout', 'add', '/.delegate-git/']);
    for (const args of steps) {
      const run = cli(story, sparse, args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
    }
    expect(fs.existsSync(path.join(sparse, '.delegate-git/keys/bob.json'))).toBe(true);
    expect(gitRun(story, sparse, ['add', '.delegate-git']).code).toBe(0);
  });
});

describe('a reader that stops early', () => {
  /** Runs the CLI with its output read (`read`) or closed before it writes, as `| head` or `grep -q` leave it. */
  const exitWith = (args: string[], read: boolean) =>
    new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [storyCli, ...args], { cwd: base, env: story.env });
      if (!read) child.stdout.destroy();
      else child.stdout.resume();
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stderr }));
    });

  it('still answers with its exit code, without a stack: a promoted revision is 0, not a crash read as a refusal', async () => {
    const [closed, read] = await Promise.all([
      exitWith(['check', '--rev', 'HEAD'], false),
      exitWith(['check', '--rev', 'HEAD'], true),
    ]);
    expect(read.code, read.stderr).toBe(0); // control
    expect(closed.code, closed.stderr).toBe(0);
    expect(closed.stderr).not.toContain('EPIPE');
  });
});

describe('an output that cannot be written', () => {
  it('says so in a line and exits 2, without a stack; control: the same command writing to a file exits 0', async () => {
    const run = (out: string) =>
      new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
        const fd = fs.openSync(out, 'w');
        const child = spawn(process.execPath, [storyCli, 'check', '--rev', 'HEAD'], {
          cwd: base,
          env: story.env,
          stdio: ['ignore', fd, 'pipe'],
        });
        fs.closeSync(fd);
        let stderr = '';
        child.stderr!.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stderr }));
      });
    const [full, file] = await Promise.all([
      run('/dev/full'),
      run(path.join(story.root, 'check-output.txt')),
    ]);
    expect(file.code, file.stderr).toBe(0);
    expect(full.code).toBe(2);
    expect(full.stderr).toContain('could not write to standard output');
    expect(full.stderr).not.toContain('    at ');
  });
});
