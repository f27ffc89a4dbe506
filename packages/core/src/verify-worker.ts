/**
 * Worker thread entry for `verify`: checks batches of ledger lines. Signature checks dominate a large ledger, and
 * each line depends only on its bytes and the trust root, so they spread over the cores.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { checkLedgerLine } from './line-check.js';
import { parseTrustRoot } from './trust-root.js';

export interface VerifyWorkerData {
  keyFiles: Array<{ path: string; text: string }>;
  repositoryId: string;
}

export interface VerifyBatch {
  id: number;
  notes: Array<{ annotated: string; lines: string[] }>;
}

const data = workerData as VerifyWorkerData;
const trustRoot = parseTrustRoot(data.keyFiles);
parentPort!.on('message', (batch: VerifyBatch) => {
  const outcomes = batch.notes.map(({ annotated, lines }) =>
    lines.map((line) => checkLedgerLine(line, annotated, trustRoot, data.repositoryId)),
  );
  parentPort!.postMessage({ id: batch.id, outcomes });
});
