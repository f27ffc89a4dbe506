/**
 * Submodules (gitlinks) in governed paths. A record judges file content, and a submodule's entry is a commit of
 * another repository, so nothing can promote it: each gate refuses one added or moved in a governed path, naming
 * why, and the way to keep one there is a reviewed policy change that excludes its path. Each refusal is paired with
 * a control that passes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adopt,
  cli,
  cliOk,
  cloneInto,
  commit,
  gitOk,
  gitRun,
  LEDGER,
  makeServer,
  makeStory,
  makeWorkTree,
  type Story,
} from '../support/cli-story.js';

const POLICY = '.delegate-git/policy.json';
const WHY = 'a submodule: records judge file content';

let story: Story;
let library: string;
let server: string;
let work: string;

beforeAll(() => {
  story = makeStory();
  library = makeWorkTree(story, 'library');
  gitOk(story, library, ['commit', '-q', '--allow-empty', '-m', 'a library']);
  server = makeServer(story);
  work = cloneInto(story, server, 'work');
  adopt(story, work, ['src/**']);
  expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);
});

afterAll(() => story.cleanup());

function addSubmodule(dir: string, at: string): void {
  gitOk(story, dir, ['-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', library, at]);
}

describe('a submodule in a governed path', () => {
  it('is refused at commit, naming why; the same submodule outside governance commits', () => {
    addSubmodule(work, 'src/vendor/lib');
    const refused = commit(story, work, 'a submodule under src/');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/vendor/lib');
    expect(refused.stderr).toContain(WHY);

    gitOk(story, work, ['rm', '-q', '--cached', '-f', 'src/vendor/lib']);
    fs.rmSync(path.join(work, 'src'), { recursive: true, force: true });
    addSubmodule(work, 'vendor/lib');
    const outside = commit(story, work, 'a submodule outside governance');
    expect(outside.code, outside.stderr).toBe(0);
    expect(gitRun(story, work, ['push', '-q', 'origin', 'main']).code).toBe(0);
  });

  it('committed past the hook, is refused by the server, and verify and check --rev name it', () => {
    addSubmodule(work, 'src/lib');
    expect(commit(story, work, 'past the hook', ['--no-verify']).code).toBe(0);
    const pushed = gitRun(story, work, ['push', 'origin', 'main']);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toMatch(/refused refs\/heads\/main [0-9a-f]{12} src\/lib: a submodule/);

    for (const args of [['verify'], ['check', '--rev', 'HEAD']]) {
      const run = cli(story, work, args);
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stdout, args.join(' ')).toContain('src/lib');
      expect(run.stdout, args.join(' ')).toContain(WHY);
      // Nothing says to approve or to fetch records for it: no record promotes a submodule.
      expect(run.stdout, args.join(' ')).not.toContain('To promote a refused file');
      expect(run.stdout, args.join(' ')).not.toContain('have no record on their content');
    }
    expect(pushed.stderr).toContain('No record promotes a submodule');
    expect(pushed.stderr).not.toContain('attest --approve');
    // Machines are told the same by the refusal's kind.
    const checked = JSON.parse(cli(story, work, ['check', '--rev', 'HEAD', '--json']).stdout) as {
      results: Array<{ path: string; kind?: string }>;
    };
    expect(checked.results.filter((r) => r.kind === 'submodule').map((r) => r.path)).toEqual(['src/lib']);
    // Control: the revision before it, with the submodule outside governance, passes both.
    expect(cli(story, work, ['verify', '--rev', 'HEAD~1']).code).toBe(0);
    expect(cli(story, work, ['check', '--rev', 'HEAD~1']).code).toBe(0);
  });

  it('is refused even when .gitmodules says `ignore = all` (which hides it from git diff), at commit and at push', () => {
    addSubmodule(work, 'src/hidden');
    gitOk(story, work, ['config', '-f', '.gitmodules', 'submodule.src/hidden.ignore', 'all']);
    gitOk(story, work, ['add', '.gitmodules']);
    expect(gitOk(story, work, ['diff', '--cached', '--name-only'])).not.toContain('src/hidden'); // what git hides
    const refused = commit(story, work, 'a hidden submodule');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('NOT PROMOTED  src/hidden');
    expect(commit(story, work, 'past the hook', ['--no-verify']).code).toBe(0);
    const pushed = gitRun(story, work, ['push', 'origin', 'main']);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain('src/hidden: a submodule');
    gitOk(story, work, ['reset', '-q', '--hard', 'HEAD~1']);
  });

  it('is kept once a reviewer approves a policy that excludes its path; the server accepts it then', () => {
    gitOk(story, work, ['reset', '-q', '--hard', 'origin/main']); // without the commit the server refused
    fs.rmSync(path.join(work, 'src'), { recursive: true, force: true });
    const policy = JSON.parse(fs.readFileSync(path.join(work, POLICY), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(
      path.join(work, POLICY),
      `${JSON.stringify({ ...policy, exclude: ['src/kept'] }, null, 2)}\n`,
    );
    cliOk(story, work, ['attest', '--approve', POLICY, '--yes']);
    gitOk(story, work, ['add', POLICY]);
    expect(commit(story, work, 'exclude the submodule, approved').code).toBe(0);
    const policyPushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(policyPushed.code, policyPushed.stderr).toBe(0);

    addSubmodule(work, 'src/kept');
    const committed = commit(story, work, 'the submodule, its path excluded');
    expect(committed.code, committed.stderr).toBe(0);
    const pushed = gitRun(story, work, ['push', 'origin', 'main']);
    expect(pushed.code, pushed.stderr).toBe(0);
    expect(cli(story, work, ['verify']).code).toBe(0);
  });
});
