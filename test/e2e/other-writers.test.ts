/**
 * Records another tool wrote by DESIGN 3, as every gate reads them: a time in another UTC form RFC 3339 allows
 * counts as the same instant; a review naming another reviewer than the key that signed it counts nowhere.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  commit,
  gitOk,
  gitRun,
  makeStory,
  OPERATOR,
  recordApproval,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
import { acceptedByEveryGate, adoptedClone } from '../support/every-gate.js';

const LEDGER = 'refs/notes/delegations';

let story: Story;
let work: string;
beforeAll(() => {
  story = makeStory();
  work = adoptedClone(story, ['src/**']);
});
afterAll(() => story.cleanup());

/** A minute ago, as Python's `datetime.now(timezone.utc).isoformat()` writes it: offset +00:00, microseconds. */
function pythonUtcNow(): string {
  return new Date(Date.now() - 60_000).toISOString().replace('Z', '000+00:00');
}

describe('records from other writers', () => {
  it('a review dated with the offset +00:00 promotes at every gate, as one dated with Z does', async () => {
    writeFiles(work, { 'src/z.ts': 'export const z = 1;\n', 'src/offset.ts': 'export const offset = 1;\n' });
    await recordApproval(story, work, 'src/z.ts', { key: OPERATOR });
    await recordApproval(story, work, 'src/offset.ts', { key: OPERATOR, createdAt: pythonUtcNow() });
    gitOk(story, work, ['add', 'src']);
    acceptedByEveryGate(story, work, 'approved by another writer');
  });

  it('a review naming another reviewer than its signer promotes nothing at any gate; control: one naming its signer', async () => {
    writeFiles(work, { 'src/own.ts': 'export const own = 1;\n' });
    await recordApproval(story, work, 'src/own.ts', {
      key: OPERATOR,
      reviewer: { name: OPERATOR, email: 'another@example.com' },
    });
    gitOk(story, work, ['add', 'src/own.ts']);
    acceptedByEveryGate(story, work, 'named as signed');

    writeFiles(work, { 'src/named.ts': 'export const named = 1;\n' });
    await recordApproval(story, work, 'src/named.ts', {
      key: OPERATOR,
      reviewer: { name: 'carol', email: 'carol@example.com' },
    });
    gitOk(story, work, ['add', 'src/named.ts']);
    const why = `it names the reviewer "carol", but the key that signed it is ${OPERATOR}'s`;
    const refused = commit(story, work, 'misnamed');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(why);
    expect(commit(story, work, 'past the hook', ['--no-verify']).code).toBe(0);
    // The server takes no line into the ledger that does not count where it is.
    const pushed = gitRun(story, work, ['push', '--atomic', 'origin', 'main', LEDGER]);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain(`refused refs/notes/delegations: note on blob`);
    expect(pushed.stderr).toContain(why);
    const verified = cli(story, work, ['verify']);
    expect(verified.code).toBe(1);
    expect(verified.stdout).toContain('NOT PROMOTED  src/named.ts');
  });
});
