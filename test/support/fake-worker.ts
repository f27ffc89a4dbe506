/**
 * The tests' worker: the product's replaying server (`delegate-git worker replay`) with scripted replies, a real
 * OpenAI-compatible HTTP server on 127.0.0.1, so the worker client is exercised over real HTTP.
 */
import { type ReplayWorker, type ScriptedReply, startReplayWorker } from '@delegate-git/delegate';

export type { RecordedRequest, ScriptedReply } from '@delegate-git/delegate';
export type FakeWorker = ReplayWorker;

export const FAKE_MODEL_ID = 'fake-coder-7b';

export function startFakeWorker(replies: ScriptedReply[] = []): Promise<FakeWorker> {
  return startReplayWorker(replies, { model: FAKE_MODEL_ID });
}
