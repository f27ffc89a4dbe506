/**
 * A push from a shallow clone, on a server that takes one (`receive.shallowUpdate`), would leave the server without
 * the history behind it: every clone of it is then shallow, and `verify`, which judges the history of the policy, the
 * keys and the ledger, can answer for no branch again (rt57 f08). git hands the hook the shallow list the push would
 * leave in `GIT_SHALLOW_FILE`; a commit there that the repository's own list lacks is history the push cuts off.
 */
import fs from 'node:fs';
import path from 'node:path';

export const SHALLOW_PUSH_REFUSED =
  'this push comes from a shallow clone and lacks history this repository does not hold: taken, it would make the repository shallow, and then no clone of it could be verified. Fetch the whole history (`git fetch --unshallow`) and push again';

/** The commits the push would add to the repository's shallow list (none for a push with its whole history). */
export function shallowBoundariesAdded(env: NodeJS.ProcessEnv, commonDir: string): string[] {
  const pushed = env.GIT_SHALLOW_FILE;
  if (!pushed) return [];
  const held = new Set(idsIn(path.join(commonDir, 'shallow')));
  return idsIn(pushed).filter((id) => !held.has(id));
}

function idsIn(file: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return text.split('\n').filter((line) => line !== '');
}
