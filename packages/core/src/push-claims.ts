/**
 * What git tells pre-receive of a push is what the pusher's client sent: the `<old> <new> <ref>` commands, old ids
 * included. git checks an old id against its ref only when it updates that ref, after the hook, and one ref at a time
 * unless the push is atomic. A client of one's own (the protocol is plain) could so name the ledger twice, the second
 * command never judged yet applied after the first (rt51 f01), or claim the ledger stands at an older tip: the branch
 * was judged by a ledger the server never holds, git failed only the ledger's update, and the branch landed (rt51
 * f02). So before a push is judged, each ref must be named once, and each old id must be what the ref holds now.
 *
 * A push that changes a ref between this read and git's update (another push) makes git fail that ref's update. For
 * the ledger, in a push that is not atomic, the branch then lands without the lines that push brought: lines that
 * verified, none the server held dropped (docs/server.md; `--atomic` closes it).
 */
import { DelegateGitError } from './errors.js';
import { gitRecords } from './git.js';
import { isZeroId, type PushRefusal, type RefUpdate } from './push-judgement.js';
import type { Repository } from './repository.js';

const COMMAND = /^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{40}|[0-9a-f]{64}) (refs\/\S+)$/;

/** The hook's standard input, one command per line; anything else is not from git, and nothing is judged. */
export function parseRefUpdates(stdin: string): RefUpdate[] {
  return stdin
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const command = COMMAND.exec(line);
      if (command === null)
        throw new DelegateGitError(
          'USAGE',
          `pre-receive read "${line.slice(0, 200)}" on its standard input, where git writes "<old id> <new id> <ref>" for each ref pushed. Run it only as git's pre-receive hook (delegate-git init --server installs it).`,
        );
      return { oldId: command[1]!, newId: command[2]!, ref: command[3]! };
    });
}

/** Refs the push names more than once: git applies each command in turn, and the later ones would go unjudged. */
export function repeatedRefs(updates: readonly RefUpdate[]): PushRefusal[] {
  const seen = new Map<string, number>();
  for (const u of updates) seen.set(u.ref, (seen.get(u.ref) ?? 0) + 1);
  return [...seen]
    .filter(([, count]) => count > 1)
    .map(([ref, count]) => ({
      ref,
      kind: 'repeated ref' as const,
      reason: `named ${count} times in one push; a push names each ref once (git push does), so this one is not judged`,
    }));
}

/** Commands whose old id is not what the ref holds now (`current`; a ref that does not exist is absent from it). */
export function staleOldIds(
  updates: readonly RefUpdate[],
  current: ReadonlyMap<string, string>,
): PushRefusal[] {
  return updates.flatMap((u) => {
    const now = current.get(u.ref);
    const claimed = isZeroId(u.oldId) ? undefined : u.oldId;
    if (now === claimed) return [];
    const was = claimed === undefined ? 'not to exist' : `at ${claimed}`;
    const is = now === undefined ? 'does not exist' : `is at ${now}`;
    return [
      {
        ref: u.ref,
        reason: `the push expects it ${was}, but on the server it ${is}; fetch, and push again`,
      },
    ];
  });
}

/** The refusals a push's commands earn before anything they name is read. */
export async function refusedClaims(repo: Repository, updates: readonly RefUpdate[]): Promise<PushRefusal[]> {
  const repeated = repeatedRefs(updates);
  if (repeated.length > 0) return repeated;
  return staleOldIds(updates, await refValues(repo, [...new Set(updates.map((u) => u.ref))]));
}

/** What each of `refs` holds now (the object a symbolic ref's target holds); a ref that does not exist is absent. */
async function refValues(repo: Repository, refs: readonly string[]): Promise<Map<string, string>> {
  const values = new Map<string, string>();
  if (refs.length === 0) return values;
  const wanted = new Set(refs);
  // A pattern matches its ref and the refs under it as a directory: only exact names are kept. A push of many refs
  // (a mirror) lists them all instead: its names could pass the length of a command line.
  const args = ['for-each-ref', '--format=%(objectname) %(refname)', ...(refs.length <= 500 ? refs : [])];
  for await (const line of gitRecords(args, { cwd: repo.cwd, env: repo.env })) {
    const space = line.indexOf(' ');
    const ref = line.slice(space + 1);
    if (wanted.has(ref)) values.set(ref, line.slice(0, space));
  }
  return values;
}
