/**
 * What the index changes against HEAD, as `git diff-index --raw -z` prints it. Its own module because the
 * pre-commit hook's quick path reads it before loading anything else.
 */
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
      if (newMode === '160000') continue;
      changes.push({ status, path: p, blob: newBlob });
    }
  }
  return changes;
}
