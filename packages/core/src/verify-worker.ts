/**
 * Worker thread entry for `verify` and the gates: checks batches of notes. Signature checks dominate a large ledger,
 * and each line depends only on its bytes, its blob and the trust root, so they spread over the cores. A batch marked
 * `indexOnly` is only read as the path index reads it (its first build over a large ledger). The threads check
 * signatures with libsodium when it loads (libsodium.ts): they are started only for work large enough to repay it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { trustKeyChecks } from './ed25519.js';
import { checkNoteBatch, indexNoteBatch, type NoteBatch } from './note-batch.js';
import { parseTrustRoot } from './trust-root.js';

export interface VerifyWorkerData {
  keyFiles: Array<{ path: string; text: string }>;
  /** The keys of keyFiles (lowercase hex), which the spawning thread found sound when it built the same trust root. */
  soundKeys: string[];
  repositoryId: string;
}

const data = workerData as VerifyWorkerData;
// One trust root per thread, so each key's KeyObject is built once and reused for every line.
trustKeyChecks(data.soundKeys);
const trustRoot = parseTrustRoot(data.keyFiles);
parentPort!.on('message', (batch: NoteBatch) => {
  parentPort!.postMessage(
    batch.indexOnly
      ? indexNoteBatch(batch)
      : checkNoteBatch(batch, trustRoot, data.repositoryId, 'libsodium'),
  );
});
