// recordStatement refuses to write a line no reader would accept: such a line fails verify and every later push of
// the ledger, while the signer said it recorded it. A worker's usage number beyond I-JSON's range was one way in.
import { describe, expect, it } from 'vitest';
import { cleanGitEnv, makeTempRepo } from '../../../test/support/git-repo.js';
import { NotesLedger } from '../src/notes-ledger.js';
import { decodeRecord } from '../src/record.js';
import { recordStatement } from '../src/recording.js';
import { generateSigningKey } from '../src/signing-key.js';
import { rfc3339, verdictStatement } from '../src/statement.js';

function statementWith(blob: string, promptTokens: number) {
  return verdictStatement([{ path: 'src/a.js', sha256: 'a'.repeat(64), gitBlob: blob }], {
    verdict: 'UNIT_PASSED',
    repository: { id: 'r' },
    createdAt: rfc3339(),
    worker: { promptTokens },
  });
}

describe('recordStatement', () => {
  it('refuses a line no reader accepts and writes nothing; control: the largest safe number is recorded', async () => {
    const r = makeTempRepo();
    try {
      const blob = r.git(['hash-object', '-w', '--stdin'], 'x\n').trim();
      const ledger = new NotesLedger({ cwd: r.dir, env: cleanGitEnv() });
      const key = generateSigningKey();
      await expect(recordStatement(ledger, statementWith(blob, 2 ** 53), key, 'too large')).rejects.toThrow(
        /the record would not be readable \(.*\), so nothing was recorded/,
      );
      expect(await ledger.tip()).toBeNull();
      const { line } = await recordStatement(ledger, statementWith(blob, 2 ** 53 - 1), key, 'largest safe');
      expect(decodeRecord(line).ok).toBe(true);
      expect(await ledger.linesOn(blob)).toEqual([line]);
    } finally {
      r.cleanup();
    }
  });
});
