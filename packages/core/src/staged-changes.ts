/**
 * What the index changes against HEAD, as `git diff-index --raw -z` prints it. Its own module because the
 * pre-commit hook's quick path reads it before loading anything else.
 */
/** A change to one path. A rename (R) also removes `from`: the gates treat that as deleting it. */
export interface StagedChange {
  status: 'A' | 'M' | 'R' | 'C' | 'T' | 'D';
  path: string;
  blob: string;
  from?: string;
}

/** Parses `--raw -z` records: ":<mode> <mode> <old> <new> <status>\0<path>[\0<path>]". */
export function parseRawDiff(fields: string[]): StagedChange[] {
  const changes: StagedChange[] = [];
  for (let i = 0; i < fields.length; ) {
    const meta = fields[i++]!;
    // Fixed layout up to the ids (":" + two 6-digit modes); the ids' length depends on the object format.
    const oldMode = meta.slice(1, 7);
    const newMode = meta.slice(8, 14);
    const statusAt = meta.lastIndexOf(' ') + 1;
    const newBlob = meta.slice(meta.lastIndexOf(' ', statusAt - 2) + 1, statusAt - 1);
    const status = meta.charAt(statusAt) as StagedChange['status'];
    if (status === 'R' || status === 'C') {
      const from = fields[i++]!;
      const to = fields[i++]!;
      changes.push({ status, path: to, blob: newBlob, from });
    } else {
      const p = fields[i++]!;
      // Submodules are not judged; but a file replaced by one is gone, as if deleted.
      if (newMode === '160000') {
        if (oldMode !== '160000' && oldMode !== '000000')
          changes.push({ status: 'D', path: p, blob: newBlob });
        continue;
      }
      changes.push({ status, path: p, blob: newBlob });
    }
  }
  return changes;
}

/** The paths a change set removes: deletions, and the old path of each rename. */
export function removedPaths(changes: readonly StagedChange[]): string[] {
  return changes.flatMap((c) => (c.status === 'D' ? [c.path] : c.status === 'R' ? [c.from!] : []));
}
