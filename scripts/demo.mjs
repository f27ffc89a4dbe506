#!/usr/bin/env node
// The whole story in a temporary repository, with the real commands: a bare remote guarded by the pre-receive
// hook, a clone that adopts delegate-git, a unit delegated to a (recorded) local worker, commits and pushes
// accepted or refused by the gates, a reviewer's approval, and the ledger verified at the end.
// Exits non-zero if any step does not behave as told. `--json` prints the step results for the story test.
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'packages', 'cli', 'bin', 'delegate-git.js');
// Step 2 of the README's quick start needs step 1's build: said once, before any step runs on a CLI that is not there.
if (!existsSync(path.join(root, 'packages', 'cli', 'dist', 'delegate-git.cjs'))) {
  process.stderr.write(
    'demo: the CLI has not been built (packages/cli/dist is missing), so no step can run. Run step 1 of the ' +
      "README's quick start first (npx --yes pnpm@10.34.8 install --frozen-lockfile && npx --yes pnpm@10.34.8 test), " +
      'then `npm run demo` again.\n',
  );
  process.exit(2);
}
const asJson = process.argv.includes('--json');
const keep = process.argv.includes('--keep');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'delegate-git-demo-'));
const remote = path.join(tmp, 'remote.git');
const work = path.join(tmp, 'work');
const gitconfig = path.join(tmp, 'gitconfig');
writeFileSync(
  gitconfig,
  '[init]\n\tdefaultBranch = main\n[user]\n\tname = Alice Demo\n\temail = alice@example.com\n',
);
const env = {
  ...process.env,
  XDG_CONFIG_HOME: path.join(tmp, 'config'),
  GIT_CONFIG_GLOBAL: gitconfig,
  GIT_CONFIG_NOSYSTEM: '1',
  DELEGATE_GIT_SIGNING_KEY: '',
};
const results = [];
const say = (text) => {
  if (!asJson) process.stdout.write(`${text}\n`);
};

function run(cmd, args, cwd = work) {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8' });
  return { code: r.status ?? 1, out: r.stdout ?? '', err: r.stderr ?? '' };
}
const dg = (args, cwd) => run(process.execPath, [cli, ...args], cwd);
const git = (args, cwd) => run('git', args, cwd);

function step(title, why, action, expect) {
  say(`\n== ${results.length + 1}. ${title}`);
  const r = action();
  const problem = expect(r);
  results.push({
    title,
    code: r.code,
    ok: !problem,
    problem: problem ?? null,
    output: `${r.out}${r.err}`.trim(),
  });
  const shown = `${r.out}${r.err}`
    .trim()
    .split('\n')
    .filter(Boolean)
    .slice(0, 12)
    .map((l) => `   | ${l}`)
    .join('\n');
  if (shown) say(shown);
  say(problem ? `   UNEXPECTED: ${problem}` : `   -> ${why}`);
  return r;
}
const exit = (code) => (r) => (r.code === code ? null : `exit code ${r.code}, expected ${code}`);
const all =
  (...checks) =>
  (r) =>
    checks.map((c) => c(r)).find(Boolean) ?? null;
const mentions = (text) => (r) =>
  `${r.out}${r.err}`.includes(text) ? null : `output does not mention "${text}"`;

async function startWorker() {
  const child = spawn(
    process.execPath,
    [cli, 'worker', 'replay', path.join(root, 'demo', 'recording.json'), '--port', '0'],
    {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      const match = /listening on (\S+)/.exec(buffered);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`the replay worker exited (${code})`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

let worker;
try {
  say(`delegate-git demo in ${tmp}`);
  say('The worker is a RECORDED conversation replayed by `delegate-git worker replay` (no model runs here).');
  say(
    'To use your own: `delegate-git config set worker.endpoint http://127.0.0.1:1234/v1` (LM Studio; Ollama :11434, vLLM :8000, llama.cpp :8080).',
  );

  git(['init', '-q', '--bare', remote], tmp);
  step(
    'The server: a bare repository with the pre-receive hook',
    'pushes are judged by the policy in force there',
    () => dg(['init', '--server'], remote),
    exit(0),
  );
  git(['clone', '-q', remote, work], tmp);
  mkdirSync(path.join(work, 'test'), { recursive: true });
  copyFileSync(path.join(root, 'demo', 'slugify.test.js'), path.join(work, 'test', 'slugify.test.js'));
  writeFileSync(path.join(work, 'package.json'), '{ "name": "demo", "type": "module", "private": true }\n');

  step(
    'Adopt delegate-git: `delegate-git init --protect "src/**"`',
    'a policy and a trust root (your key, delegator + reviewer) are written and approved as the anchor; the pre-commit hook is installed',
    () => dg(['init', '--protect', 'src/**', '--key', 'alice']),
    all(exit(0), mentions('installed the pre-commit hook')),
  );
  git(['add', '.']);
  step(
    'Commit the adoption',
    "the policy and key file carry init's approval, so the gate lets them in",
    () => git(['commit', '-qm', 'Adopt delegate-git']),
    exit(0),
  );
  step(
    'Push it (branch and ledger in one atomic push)',
    'first push: the server trusts the policy it receives (the anchor)',
    () => git(['push', '-q', '--atomic', 'origin', 'main', 'refs/notes/delegations']),
    exit(0),
  );

  worker = await startWorker();
  dg(['config', 'set', 'worker.endpoint', worker.url]);
  // The model on record is the operator's setting: here, the one the recording was made with.
  const recorded = JSON.parse(readFileSync(path.join(root, 'demo', 'recording.json'), 'utf8'));
  dg(['config', 'set', 'worker.model', recorded.model]);
  dg(['config', 'set', 'verification.allowlist', '["node"]']);
  writeFileSync(path.join(work, 'unit.json'), readFileSync(path.join(root, 'demo', 'unit.json')));
  step(
    'Delegate a unit: `delegate-git delegate unit.json`',
    'the worker wrote src/slugify.js; `node --test` passed 3 runs out of 3; the signed UNIT_PASSED verdict is in refs/notes/delegations',
    () => dg(['delegate', 'unit.json']),
    all(exit(0), mentions('Verdict: UNIT_PASSED')),
  );
  step(
    'Commit the delegated file',
    'its staged content is exactly what the verdict covers',
    () => {
      git(['add', 'src/slugify.js']);
      return git(['commit', '-qm', 'Add slugify (delegated)']);
    },
    exit(0),
  );

  writeFileSync(
    path.join(work, 'src', 'slugify.js'),
    `${readFileSync(path.join(work, 'src', 'slugify.js'), 'utf8')}// hand edit\n`,
  );
  git(['add', 'src/slugify.js']);
  step(
    'A hand edit of the governed file',
    'refused at commit: the content changed after the verdict',
    () => git(['commit', '-qm', 'Hand edit']),
    all(exit(1), mentions('changed after the verdict')),
  );
  step(
    'The same edit committed with --no-verify',
    'the local hook was skipped, which any developer can do...',
    () => git(['commit', '-qm', 'Hand edit (hook skipped)', '--no-verify']),
    exit(0),
  );
  step(
    '...and pushed',
    'the server refuses it: no record covers that content',
    () => git(['push', '-q', '--atomic', 'origin', 'main', 'refs/notes/delegations']),
    all(exit(1), mentions('refused')),
  );
  step(
    'A reviewer reads it and approves: `delegate-git attest --approve src/slugify.js`',
    'a signed review of exactly this content is added to the ledger',
    () => dg(['attest', '--approve', 'src/slugify.js', '-m', 'hand edit reviewed', '--yes']),
    exit(0),
  );
  step(
    'Push the branch and the ledger together',
    'the approval travels in the same atomic push, so the server accepts',
    () => git(['push', '-q', '--atomic', 'origin', 'main', 'refs/notes/delegations']),
    exit(0),
  );
  step(
    'CI: `delegate-git verify`',
    'every record verifies, every governed file is promoted, the ledger only grew',
    () => dg(['verify']),
    all(exit(0), mentions('verify: ok')),
  );
  step(
    'The accounting: `delegate-git report`',
    'the ledger read as delegations, verdicts, signers and tokens',
    () => dg(['report']),
    exit(0),
  );
} catch (error) {
  results.push({ title: 'demo', ok: false, problem: String(error), code: 2, output: '' });
} finally {
  worker?.stop();
  if (!keep) rmSync(tmp, { recursive: true, force: true });
}

const failed = results.filter((r) => !r.ok);
if (asJson) process.stdout.write(`${JSON.stringify({ steps: results, failed: failed.length }, null, 2)}\n`);
else
  say(
    `\n${failed.length === 0 ? `demo: all ${results.length} steps behaved as described` : `demo: ${failed.length} step(s) did NOT behave as described`}${keep ? ` (kept ${tmp})` : ''}`,
  );
process.exitCode = failed.length === 0 ? 0 : 1;
