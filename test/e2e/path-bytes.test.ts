/**
 * File names git stores as bytes that are not UTF-8. Each gate reads them byte for byte, so a record for another name
 * (one holding U+FFFD, which a lossy decoding of those bytes gives) does not promote them.
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
  type Story,
  writeFiles,
} from '../support/cli-story.js';

const CONTENT = 'export const x = 1;\n';

let story: Story;
beforeAll(() => {
  story = makeStory();
});
afterAll(() => story.cleanup());

describe('a file name that is not UTF-8', () => {
  it('is not promoted by a record for the name its bytes decode to with U+FFFD, at the hook, the server and verify; that name itself is (control)', () => {
    const server = makeServer(story, 'bytes.git');
    const work = cloneInto(story, server, 'bytes');
    adopt(story, work, ['src/**']);
    expect(gitRun(story, work, ['push', '-q', '--atomic', 'origin', 'main', LEDGER]).code).toBe(0);

    const replaced = 'src/\uFFFD.ts';
    writeFiles(work, { [replaced]: CONTENT });
    cliOk(story, work, ['attest', '--approve', replaced, '--yes']);
    fs.rmSync(path.join(work, replaced));
    // src/<0xE9>.ts: Latin-1 "é", which UTF-8 decoding with replacement reads as src/\uFFFD.ts.
    const latin1 = Buffer.concat([
      Buffer.from(path.join(work, 'src/')),
      Buffer.from([0xe9]),
      Buffer.from('.ts'),
    ]);
    fs.writeFileSync(latin1, CONTENT);
    gitOk(story, work, ['add', 'src']);

    const hook = commit(story, work, 'a name that is not UTF-8');
    expect(hook.code).not.toBe(0);
    expect(hook.stderr).toContain('1 governed file(s): 0 promoted, 1 refused');
    gitOk(story, work, ['commit', '-q', '--no-verify', '-m', 'a name that is not UTF-8']);
    const push = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(push.code).not.toBe(0);
    expect(push.stderr).toContain('(pre-receive hook declined)');
    const verify = cli(story, work, ['verify']);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain('1 refused');

    // Control: the name the record was made for, with the same content, passes all three.
    gitOk(story, work, ['reset', '-q', '--hard', 'HEAD~1']);
    expect(fs.existsSync(latin1)).toBe(false);
    writeFiles(work, { [replaced]: CONTENT });
    gitOk(story, work, ['add', 'src']);
    expect(gitOk(story, work, ['status', '--porcelain'])).toBe('A  "src/\\357\\277\\275.ts"');
    const passed = commit(story, work, 'the approved name');
    expect(passed.code, passed.stderr).toBe(0);
    const accepted = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(cli(story, work, ['verify']).code).toBe(0);
  });
});
