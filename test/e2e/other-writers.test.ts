/**
 * Records another tool wrote by DESIGN 3, as every gate reads them: a time in another UTC form RFC 3339 allows
 * counts as the same instant; who reviewed is the key that signed, whatever the review names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cli,
  gitOk,
  makeStory,
  OPERATOR,
  recordApproval,
  type Story,
  writeFiles,
} from '../support/cli-story.js';
import { acceptedByEveryGate, adoptedClone } from '../support/every-gate.js';

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

  it("who reviewed is the signing key, whatever the review names: it counts, and is shown, as its signer's", async () => {
    writeFiles(work, { 'src/named.ts': 'export const named = 1;\n' });
    const blob = await recordApproval(story, work, 'src/named.ts', {
      key: OPERATOR,
      reviewer: { name: 'carol', email: 'carol@example.com' },
    });
    gitOk(story, work, ['add', 'src/named.ts']);
    acceptedByEveryGate(story, work, 'named otherwise');
    const shown = JSON.parse(cli(story, work, ['show', 'src/named.ts', '--json']).stdout) as {
      blob: string;
      records: Array<{ signer: string }>;
    };
    expect(shown.blob).toBe(blob);
    expect(shown.records.map((r) => r.signer)).toEqual([OPERATOR]);
  });
});
