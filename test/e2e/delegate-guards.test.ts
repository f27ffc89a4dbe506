// `delegate-git delegate` end to end, the guards in front of the worker: a credential in the declared context, a
// unit that tries to carry operator settings or is not valid JSON, an unreachable worker, a signing key outside
// the trust root; and `delegate-git config` itself. Built CLI, a temp repository, a real HTTP worker on 127.0.0.1.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  type DelegateRepo,
  FAKE_AWS_KEY_ID,
  fileBlock,
  makeDelegateRepo,
  userPrompt,
} from '../support/delegate-repo.js';
import { type FakeWorker, startFakeWorker } from '../support/fake-worker.js';

let worker: FakeWorker;
let repo: DelegateRepo;
let closedUrl: string;

beforeAll(async () => {
  worker = await startFakeWorker();
  closedUrl = await closedPortUrl();
  repo = await makeDelegateRepo({
    workerUrl: worker.url,
    files: {
      'config/settings.js': `export const region = 'eu-west-1';\nexport const accessKeyId = '${FAKE_AWS_KEY_ID}';\n`,
      'config/clean.js': "export const region = 'eu-west-1';\n",
    },
  });
});

afterAll(async () => {
  await worker?.close();
  repo?.cleanup();
});

/** A URL on 127.0.0.1 where nothing listens: a port that was just bound and released. */
async function closedPortUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

const creating = (file: string) => ({
  taskName: file,
  instruction: `Create ${file}.`,
  targetFiles: [file],
  runVerification: 'true',
});

describe('credential scan of the declared context', () => {
  test('an AWS access key id in a context file is CONTEXT_REFUSED and the worker is never called', async () => {
    // A worker of its own, so "never called" is its request counter staying at 0.
    const untouched = await startFakeWorker([{ content: fileBlock('src/uses-settings.js', 'export {};') }]);
    const ledgerBefore = repo.ledgerCommits();
    const { code, stdout, receipt } = await repo.delegate(
      { ...creating('src/uses-settings.js'), contextFiles: [{ path: 'config/settings.js' }] },
      { env: { DELEGATE_GIT_WORKER_ENDPOINT: untouched.url } },
    );
    await untouched.close();
    expect(untouched.requestCount()).toBe(0);

    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('CONTEXT_REFUSED');
    expect(receipt?.message).toContain('the worker was not called');
    expect(receipt?.errors).toEqual([expect.stringMatching(/^credential in config\/settings\.js:2 \(aws/)]);
    expect(stdout).not.toContain(FAKE_AWS_KEY_ID);
    expect(repo.exists('src/uses-settings.js')).toBe(false);
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
  });

  test('control: a clean context file is sent, and the receipt lists its slice', async () => {
    const before = worker.requestCount();
    worker.enqueue({
      content: fileBlock('src/uses-clean.js', "export { region } from '../config/clean.js';"),
    });
    const { code, receipt } = await repo.delegate({
      ...creating('src/uses-clean.js'),
      contextFiles: [{ path: 'config/clean.js', startLine: 1, endLine: 99 }],
    });

    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(worker.requestCount()).toBe(before + 1);
    expect(receipt?.context).toEqual([
      {
        path: 'config/clean.js',
        lineRange: [1, 1],
        lines: 1,
        bytes: 35,
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
    ]);
    const user = userPrompt(worker.requests.at(-1));
    expect(user).toContain(
      "Declared Context:\n--- config/clean.js (lines 1-1) ---\nexport const region = 'eu-west-1';\n",
    );
  });
});

describe('a context list repeated or long', () => {
  test('one entry named 20,000 times is sent once; 30 refused entries print 20 lines and a count (all in --json)', async () => {
    worker.enqueue({ content: fileBlock('src/repeated.js', 'export {};') });
    const { code, receipt } = await repo.delegate({
      ...creating('src/repeated.js'),
      contextFiles: Array.from({ length: 20_000 }, () => ({ path: 'config/clean.js' })),
    });
    expect(code).toBe(0);
    expect(receipt?.context.map((c) => c.path)).toEqual(['config/clean.js']);

    const before = worker.requestCount();
    const many = repo.writeUnit({
      ...creating('src/never.js'),
      contextFiles: Array.from({ length: 30 }, (_, i) => ({ path: `../missing-${i}.js` })),
    });
    const text = await repo.cli(['delegate', many]);
    expect(text.code).toBe(1);
    const refusedLines = text.stdout.split('\n').filter((l) => l.startsWith('  refused: '));
    expect(refusedLines).toHaveLength(20);
    expect(text.stdout).toContain('  … and 10 more refused (--json lists them all)\n');
    const json = await repo.cli(['delegate', many, '--json']);
    expect(JSON.parse(json.stdout).errors).toHaveLength(30);
    expect(worker.requestCount()).toBe(before);
  });
});

describe('what a unit may never write', () => {
  test('a workspace inside .git is CONTEXT_REFUSED before the worker is called; git config stays as it was', async () => {
    const config = fs.readFileSync(path.join(repo.dir, '.git', 'config'), 'utf8');
    const before = worker.requestCount();
    const { code, receipt } = await repo.delegate({
      taskName: 'config',
      instruction: 'Patch config.',
      workspaceDir: '.git',
      runVerification: 'true',
    });
    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('CONTEXT_REFUSED');
    expect(receipt?.message).toContain('is inside a git directory');
    expect(worker.requestCount()).toBe(before);
    expect(fs.readFileSync(path.join(repo.dir, '.git', 'config'), 'utf8')).toBe(config);
  });

  test('a unit that declares no targetFiles is CONTEXT_REFUSED before the worker is called; control: with unitScope "off" the worker writes', async () => {
    const unit = { taskName: 'anywhere', instruction: 'Create src/anywhere.js.', runVerification: 'true' };
    const before = worker.requestCount();
    const refused = await repo.delegate(unit);
    expect(refused.code).toBe(1);
    expect(refused.receipt?.verdict).toBe('CONTEXT_REFUSED');
    expect(refused.receipt?.message).toContain('declares no targetFiles');
    expect(refused.receipt?.taskName).toBe('anywhere');
    expect(worker.requestCount()).toBe(before);

    await repo.configSet('unitScope', 'off');
    try {
      worker.enqueue({ content: fileBlock('src/anywhere.js', 'export const anywhere = 1;') });
      const written = await repo.delegate(unit);
      expect(written.receipt?.verdict, written.receipt?.message ?? '').toBe('UNIT_PASSED');
      expect(worker.requestCount()).toBe(before + 1);
      expect(repo.exists('src/anywhere.js')).toBe(true);
    } finally {
      await repo.configSet('unitScope', 'enforce');
    }
  });

  test('targetFiles no write may reach (outside the workspace, in .git, the policy) are CONTEXT_REFUSED before the worker is called; control: a plain target and a directory target pass (finding dl03)', async () => {
    const before = worker.requestCount();
    const refused = await repo.delegate({
      taskName: 'unreachable',
      instruction: 'Write them.',
      targetFiles: ['../x.js', '.git/hooks/post-checkout', '.delegate-git/policy.json', 'src/ok.js'],
      runVerification: 'true',
    });
    expect(refused.code).toBe(1);
    expect(refused.receipt?.verdict).toBe('CONTEXT_REFUSED');
    expect(refused.receipt?.message).toContain('no write may reach, so the worker was not called');
    const errors = refused.receipt?.errors ?? [];
    expect(errors).toHaveLength(3);
    expect(errors[0]).toMatch(/^targetFiles: `\.\.\/x\.js` resolves to .*, outside the workspace/);
    expect(errors[1]).toContain('`.git/hooks/post-checkout` is inside a git directory');
    expect(errors[2]).toContain('`.delegate-git/policy.json` is the policy or a key file of the trust root');
    expect(worker.requestCount()).toBe(before);

    worker.enqueue({ content: fileBlock('src/reach/ok.js', 'export const ok = 1;') });
    const passed = await repo.delegate({
      taskName: 'reachable',
      instruction: 'Write it.',
      targetFiles: ['src/reach/', './src/other.js'],
      runVerification: 'true',
    });
    expect(passed.receipt?.verdict, passed.receipt?.message ?? '').toBe('UNIT_PASSED');
    expect(worker.requestCount()).toBe(before + 1);
  });

  test('a git directory of another name (a gitfile points at it) is refused like .git; the rest is written', async () => {
    const other = await makeDelegateRepo({ workerUrl: worker.url });
    try {
      fs.renameSync(path.join(other.dir, '.git'), path.join(other.dir, 'meta'));
      fs.writeFileSync(path.join(other.dir, '.git'), 'gitdir: meta\n');
      worker.enqueue({
        content: [
          fileBlock('meta/hooks/pre-commit', 'echo pwned'),
          fileBlock('src/plain.js', 'export {};'),
        ].join('\n'),
      });
      const { receipt } = await other.delegate({
        taskName: 'meta',
        instruction: 'Add.',
        // A target there is refused before the worker is called (the unit's mistake); here the worker strays.
        targetFiles: ['src/plain.js'],
        runVerification: 'true',
      });
      expect(receipt?.errors).toEqual([
        '`meta/hooks/pre-commit` is inside a git directory, which a unit may never write; not written',
      ]);
      expect(fs.existsSync(path.join(other.dir, 'meta', 'hooks', 'pre-commit'))).toBe(false);
      expect(receipt?.files.map((f) => f.path)).toEqual(['src/plain.js']);
    } finally {
      other.cleanup();
    }
  });

  test('the policy and a key file are refused, the rest of the reply written (control)', async () => {
    worker.enqueue({
      content: [
        fileBlock('.delegate-git/keys/mallory.json', '{}'),
        fileBlock('src/beside-keys.js', 'export const b = 1;'),
      ].join('\n'),
    });
    const { receipt } = await repo.delegate({
      taskName: 'keys',
      instruction: 'Add a key.',
      targetFiles: ['.delegate-git', 'src/beside-keys.js'],
      runVerification: 'true',
    });
    expect(receipt?.errors).toEqual([
      "`.delegate-git/keys/mallory.json` is the policy or a key file of the trust root; only reviewers change those (a unit's verdict never promotes them). Not written.",
    ]);
    expect(fs.existsSync(path.join(repo.dir, '.delegate-git/keys/mallory.json'))).toBe(false);
    expect(receipt?.files.map((f) => f.path)).toEqual(['src/beside-keys.js']);
  });
});

describe('the unit file', () => {
  test('a unit carrying an operator setting (`endpoint`) is refused with exit 2, naming the field and its setting', async () => {
    const before = worker.requestCount();
    const { code, stdout, stderr } = await repo.delegate({
      ...creating('src/redirected.js'),
      endpoint: closedUrl,
    });
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('endpoint: `endpoint` is an operator setting; a unit cannot set it');
    expect(stderr).toContain('delegate-git config set worker.endpoint');
    expect(worker.requestCount()).toBe(before);
    expect(repo.exists('src/redirected.js')).toBe(false);
  });

  test('a unit that is not valid JSON is refused with exit 2', async () => {
    const before = worker.requestCount();
    const { code, stderr } = await repo.delegate('{"taskName": "broken", "instruction": ');
    expect(code).toBe(2);
    expect(stderr).toContain('not valid JSON');
    expect(worker.requestCount()).toBe(before);
  });

  test('a unit without an instruction is refused with exit 2 naming the field', async () => {
    const { code, stderr } = await repo.delegate({ taskName: 'no instruction' });
    expect(code).toBe(2);
    expect(stderr).toContain('instruction: is required');
  });

  test('`__proto__` is named as no unit field, not as an operator setting', async () => {
    const { code, stderr } = await repo.delegate('{"__proto__":{},"taskName":"t","instruction":"i"}');
    expect(code).toBe(2);
    expect(stderr).toContain('__proto__: `__proto__` is not a unit field (a unit has: taskName,');
    expect(stderr).not.toContain('[object Object]');
  });

  test('a unit with a byte order mark or in UTF-16 is refused naming the encoding, no invisible character printed', async () => {
    const text = JSON.stringify(creating('src/bom.js'));
    const bom = await repo.delegate(`\ufeff${text}`);
    expect(bom.code).toBe(2);
    expect(bom.stderr).toContain('starts with a byte order mark; save it as UTF-8 without one');
    expect(bom.stderr).not.toContain('\ufeff');
    const file = repo.writeUnit('', 'utf16.json');
    fs.writeFileSync(file, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]));
    const utf16 = await repo.cli(['delegate', file]);
    expect(utf16.code).toBe(2);
    expect(utf16.stderr).toContain('is not UTF-8 (it looks like UTF-16); save it as UTF-8');
    expect(utf16.stderr).not.toMatch(/[\u0000\ufffd]/);
  });

  test('a unit file over 4 MiB is refused with exit 2 before the worker is called', async () => {
    const before = worker.requestCount();
    const { code, stderr } = await repo.delegate({
      ...creating('src/huge.js'),
      instruction: 'x'.repeat(4 * 1024 * 1024),
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(/bytes, over the 4194304-byte limit for a unit; name the files/);
    expect(worker.requestCount()).toBe(before);
  });

  test("a unit's name with a NUL, escapes and a bidi override is recorded, its notes commit escaped on one line that git fsck accepts", async () => {
    worker.enqueue({ content: fileBlock('src/named.js', 'export const named = 1;') });
    const { code, receipt } = await repo.delegate({
      ...creating('src/named.js'),
      taskName: 'a\u0000b\u001b]0;owned\u0007\u001b[2J\u202e\nnext',
    });
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    repo.git(['fsck', '--strict', '--no-progress']);
    const commit = repo.git(['cat-file', 'commit', 'refs/notes/delegations']);
    expect(commit.slice(commit.indexOf('\n\n') + 2)).toBe(
      'delegate-git delegate: UNIT_PASSED a\\u0000b\\u001b]0;owned\\u0007\\u001b[2J\\u202e\\u000anext',
    );
  });
});

describe('the worker endpoint', () => {
  test('DELEGATE_GIT_WORKER_ENDPOINT overrides the setting: a closed port gives WORKER_ERROR, exit 1, nothing written', async () => {
    const before = worker.requestCount();
    const ledgerBefore = repo.ledgerCommits();
    const env = { DELEGATE_GIT_WORKER_ENDPOINT: closedUrl };
    const { code, receipt } = await repo.delegate(creating('src/unreached.js'), { env });

    expect(code).toBe(1);
    expect(receipt?.verdict).toBe('WORKER_ERROR');
    expect(receipt?.message).toContain('Could not reach the worker at 127.0.0.1:');
    expect(receipt?.message).toContain('Nothing was written.');
    expect(receipt?.files).toEqual([]);
    expect(repo.exists('src/unreached.js')).toBe(false);
    expect(worker.requestCount()).toBe(before);
    expect(repo.ledgerCommits()).toBe(ledgerBefore);

    const shown = await repo.cli(['config', 'get', 'worker.endpoint'], { env });
    expect(JSON.parse(shown.stdout)).toBe(closedUrl);
  });

  test('control: without the override the configured worker is called and the unit passes', async () => {
    const before = worker.requestCount();
    worker.enqueue({ content: fileBlock('src/reached.js', 'export const reached = 1;') });
    const { code, receipt } = await repo.delegate(creating('src/reached.js'));
    expect(code).toBe(0);
    expect(receipt?.verdict).toBe('UNIT_PASSED');
    expect(worker.requestCount()).toBe(before + 1);
  });
});

describe('the worker API key', () => {
  afterAll(() => repo.configSet('worker.apiKeyEnv', 'null'));

  test('a key variable named in the settings but not set stops with exit 2, naming it, before the worker is called', async () => {
    await repo.configSet('worker.apiKeyEnv', 'DG_TEST_WORKER_KEY');
    const before = worker.requestCount();
    const { code, stderr } = await repo.delegate(creating('src/keyless.js'));
    expect(code).toBe(2);
    expect(stderr).toContain(
      'worker.apiKeyEnv names the environment variable DG_TEST_WORKER_KEY, which is not set',
    );
    expect(worker.requestCount()).toBe(before);
    expect(repo.exists('src/keyless.js')).toBe(false);
  });

  test('control: with the variable set, the key goes to the worker as a bearer token', async () => {
    await repo.configSet('worker.apiKeyEnv', 'DG_TEST_WORKER_KEY');
    worker.enqueue({ content: fileBlock('src/keyed.js', 'export const keyed = 1;') });
    const { code } = await repo.delegate(creating('src/keyed.js'), {
      env: { DG_TEST_WORKER_KEY: 'local-secret' },
    });
    expect(code).toBe(0);
    expect(worker.requests.at(-1)?.headers.authorization).toBe('Bearer local-secret');
  });
});

describe('the signing key', () => {
  test('a key outside the trust root is refused with exit 2 before the worker is called', async () => {
    const keygen = await repo.cli(['keygen', 'stranger']);
    expect(keygen.code).toBe(0);
    const before = worker.requestCount();
    const ledgerBefore = repo.ledgerCommits();
    const { code, stdout, stderr } = await repo.delegate(creating('src/unsigned.js'), {
      args: ['--key', 'stranger'],
    });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain('is not in the trust root');
    expect(worker.requestCount()).toBe(before);
    expect(repo.exists('src/unsigned.js')).toBe(false);
    expect(repo.ledgerCommits()).toBe(ledgerBefore);
  });

  test('control: the registered key, named explicitly, signs', async () => {
    worker.enqueue({ content: fileBlock('src/signed.js', 'export const signed = 1;') });
    const { code, receipt } = await repo.delegate(creating('src/signed.js'), { args: ['--key', 'operator'] });
    expect(code).toBe(0);
    expect(receipt?.envelope).toBeTruthy();
    expect(repo.noteLines(receipt!.files[0]!.gitBlob)).toEqual([receipt?.envelope]);
  });
});

describe('a lock on the ledger that a stopped git left', () => {
  test('stops delegate before the worker is called, naming the file, and attest at once; control: removed, both record (rt46 f02)', async () => {
    const lock = path.join(repo.dir, '.git', 'refs', 'notes', 'delegations.lock');
    fs.writeFileSync(lock, '');
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(lock, old, old);
    try {
      const before = worker.requestCount();
      const ledgerBefore = repo.ledgerCommits();
      const { code, stderr } = await repo.delegate(creating('src/locked.js'), {
        args: ['--key', 'operator'],
      });
      expect(code).toBe(2);
      expect(stderr).toMatch(
        /its lock file \S+delegations\.lock is \d+ s old, left by a git process that stopped/,
      );
      expect(stderr).toContain(lock);
      expect(worker.requestCount()).toBe(before);
      expect(repo.exists('src/locked.js')).toBe(false);
      repo.write('config/attested.js', 'export const attested = 1;\n');
      const started = Date.now();
      const attest = await repo.cli([
        'attest',
        '--approve',
        'config/attested.js',
        '--yes',
        '--key',
        'operator',
      ]);
      expect(attest.code).toBe(2);
      expect(attest.stderr).toContain(`its lock file ${lock}`);
      expect(Date.now() - started).toBeLessThan(8_000); // not 40 retries of a lost race
      expect(repo.ledgerCommits()).toBe(ledgerBefore);
    } finally {
      fs.rmSync(lock, { force: true });
    }
    worker.enqueue({ content: fileBlock('src/locked.js', 'export const locked = 1;') });
    const { code, receipt } = await repo.delegate(creating('src/locked.js'), { args: ['--key', 'operator'] });
    expect(code).toBe(0);
    expect(repo.noteLines(receipt!.files[0]!.gitBlob)).toEqual([receipt?.envelope]);
    expect(
      (await repo.cli(['attest', '--approve', 'config/attested.js', '--yes', '--key', 'operator'])).code,
    ).toBe(0);
  });
});

describe('delegate-git config', () => {
  test('set then get round-trips strings and JSON values, and the setting reaches the worker request', async () => {
    const set = await repo.cli(['config', 'set', 'worker.model', 'qwen2.5-coder:14b']);
    expect(set.code).toBe(0);
    expect(set.stdout).toBe('worker.model = "qwen2.5-coder:14b"\n');
    expect(JSON.parse((await repo.cli(['config', 'get', 'worker.model'])).stdout)).toBe('qwen2.5-coder:14b');

    expect((await repo.cli(['config', 'set', 'verification.allowlist', '["node","npm"]'])).code).toBe(0);
    expect(JSON.parse((await repo.cli(['config', 'get', 'verification.allowlist'])).stdout)).toEqual([
      'node',
      'npm',
    ]);
    const all = JSON.parse((await repo.cli(['config', 'get'])).stdout);
    expect(all.worker).toMatchObject({ endpoint: worker.url, model: 'qwen2.5-coder:14b' });
    expect(all.verification).toMatchObject({ approval: 'allow', repeats: 3 });

    // Local operator state: never in the work tree.
    expect(repo.gitText(['status', '--porcelain', '--untracked-files=all'])).not.toContain('config.json');

    // Two personal keys exist since the `stranger` test; the signingKey setting says which one delegations use.
    expect((await repo.cli(['config', 'set', 'signingKey', 'operator'])).code).toBe(0);
    worker.enqueue({ content: fileBlock('src/modelled.js', 'export const modelled = 1;') });
    const { code, stderr } = await repo.delegate(creating('src/modelled.js'));
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(worker.requests.at(-1)!.body.model).toBe('qwen2.5-coder:14b');

    // A setting naming no key: the error says the name came from the config, not from a --key never passed.
    expect((await repo.cli(['config', 'set', 'signingKey', 'nosuchkey'])).code).toBe(0);
    const missing = await repo.delegate(creating('src/unsigned.js'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('The signing key comes from config signingKey ("nosuchkey")');
    expect((await repo.cli(['config', 'set', 'signingKey', 'operator'])).code).toBe(0);
  });

  test.each([
    ['verification.approval', 'sometimes', 'verification.approval'],
    ['verification.repeats', '0', 'verification.repeats'],
    ['worker.timeoutMs', '"soon"', 'worker.timeoutMs'],
    // Node fires a timer longer than 2^31-1 ms after 1 ms: an instant timeout, or a false UNIT_FAILED signed (rt39 f03).
    ['worker.timeoutMs', '3000000000', 'worker.timeoutMs: must be at most 2147483647 ms'],
    ['worker.idleTimeoutMs', '2147483648', 'worker.idleTimeoutMs: must be at most 2147483647 ms'],
    ['verification.timeoutMs', '2147483648', 'verification.timeoutMs: must be at most 2147483647 ms'],
    ['worker.timeoutMs', '0', 'worker.timeoutMs: must be a whole number of milliseconds, more than 0'],
    ['worker.maxTokens', '0', 'worker.maxTokens: must be more than 0'],
    ['worker.colour', 'blue', 'has unknown field(s) "colour"'],
    ['worker.endpoint', 'notaurl', 'worker.endpoint: must be an http:// or https:// URL'],
    ['worker.endpoint', 'ftp://127.0.0.1/v1', 'worker.endpoint: must be an http:// or https:// URL'],
    // Kept in plain text and shown: a secret belongs in the environment (worker.apiKeyEnv). A user alone is no secret.
    ['worker.endpoint', 'http://me:s3cret@127.0.0.1:1234/v1', 'worker.endpoint: must not hold a password'],
    // A name, as keygen made it: never a path (`../../x`) into or out of the keys directory.
    ['signingKey', '../../x', 'signingKey: must be a key name'],
  ])(
    'a bad value is refused with exit 2 and nothing changes: config set %s %s',
    async (key, value, named) => {
      const file = path.join(repo.stateDir, 'config.json');
      const before = fs.readFileSync(file, 'utf8');
      const { code, stdout, stderr } = await repo.cli(['config', 'set', key, value]);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toContain(named);
      expect(stderr).toContain('Nothing was changed');
      expect(stderr).not.toContain('Fix it with `delegate-git config set');
      expect(fs.readFileSync(file, 'utf8')).toBe(before);
    },
  );

  test('a value that parses as JSON of another type is taken as the string a setting wants (a model named 2024); the longest timer Node keeps is taken', async () => {
    for (const [key, value, taken] of [
      ['worker.model', '2024', '2024'],
      ['worker.model', 'true', 'true'],
      ['worker.model', '"quoted"', 'quoted'],
      ['worker.timeoutMs', '2147483647', 2_147_483_647],
    ] as const) {
      const set = await repo.cli(['config', 'set', key, value]);
      expect(set.code, set.stderr).toBe(0);
      expect(JSON.parse((await repo.cli(['config', 'get', key])).stdout)).toBe(taken);
    }
    expect((await repo.cli(['config', 'set', 'worker.model', 'qwen2.5-coder:14b'])).code).toBe(0);
    expect((await repo.cli(['config', 'set', 'worker.timeoutMs', '300000'])).code).toBe(0);
  });

  test('a settings file that is not JSON stops get, set and delegate with exit 2 and advice that works; the file is kept', async () => {
    const file = path.join(repo.stateDir, 'config.json');
    const good = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, '{"worker": ');
    try {
      for (const args of [
        ['config', 'get'],
        ['config', 'set', 'verification.repeats', '4'],
      ]) {
        const { code, stderr } = await repo.cli(args);
        expect(code).toBe(2);
        expect(stderr).toContain('config.json is not valid JSON');
        expect(stderr).toContain('Fix it by hand, or delete it to start from the defaults');
      }
      const delegated = await repo.delegate(creating('src/never.js'));
      expect(delegated.code).toBe(2);
      expect(fs.readFileSync(file, 'utf8')).toBe('{"worker": ');
    } finally {
      fs.writeFileSync(file, good);
    }
    expect((await repo.cli(['config', 'get', 'verification.repeats'])).code).toBe(0); // control: restored
  });

  test('an unknown setting is named, with where to find the settings; an endpoint from the environment must be a URL', async () => {
    const unknown = await repo.cli(['config', 'get', 'worker.colour']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      'There is no setting "worker.colour". `delegate-git config get` lists them all',
    );

    const requests = worker.requests.length;
    const refused = await repo.delegate(creating('src/never.js'), {
      env: { DELEGATE_GIT_WORKER_ENDPOINT: '127.0.0.1:1234' },
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'DELEGATE_GIT_WORKER_ENDPOINT ("127.0.0.1:1234") must be an http:// or https:// URL',
    );
    expect(worker.requests.length).toBe(requests); // the worker was never called
  });

  test('an endpoint from the environment may not hold a password either (rt53 f06): delegate and config get refuse it, never printing it; control: a user name alone is taken', async () => {
    const secret = ['S3cret', 'Pw'].join('');
    const withPassword = worker.url.replace('http://', `http://u:${secret}@`);
    const requests = worker.requests.length;
    const refused = await repo.delegate(creating('src/never.js'), {
      env: { DELEGATE_GIT_WORKER_ENDPOINT: withPassword },
    });
    const got = await repo.cli(['config', 'get', 'worker.endpoint'], {
      env: { DELEGATE_GIT_WORKER_ENDPOINT: withPassword },
    });
    for (const run of [refused, got]) {
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        `DELEGATE_GIT_WORKER_ENDPOINT ("${worker.url.replace('http://', 'http://u:***@')}") must not hold a password (user:password@): put the secret in an environment variable and name it with worker.apiKeyEnv. Fix or unset it.`,
      );
      expect(run.stdout + run.stderr).not.toContain(secret);
    }
    expect(worker.requests.length).toBe(requests); // the worker was never called
    expect(fs.existsSync(path.join(repo.dir, 'src', 'never.js'))).toBe(false);

    const userOnly = worker.url.replace('http://', 'http://u@');
    const taken = await repo.cli(['config', 'get', 'worker.endpoint'], {
      env: { DELEGATE_GIT_WORKER_ENDPOINT: userOnly },
    });
    expect(taken.code, taken.stderr).toBe(0);
    expect(JSON.parse(taken.stdout)).toBe(userOnly);
  });

  test('control: a good value for the same key is written', async () => {
    expect((await repo.cli(['config', 'set', 'verification.repeats', '5'])).code).toBe(0);
    expect(
      JSON.parse(fs.readFileSync(path.join(repo.stateDir, 'config.json'), 'utf8')).verification,
    ).toMatchObject({
      approval: 'allow',
      allowlist: ['node', 'npm'],
      repeats: 5,
    });
  });
});
