import path from 'node:path';
import {
  type JudgedLine,
  judgeDistinctLines,
  Repository,
  type TrustRoot,
  unitNameOf,
  workerOf,
} from '@delegate-git/core';
import { relativeWithin } from '@delegate-git/core/path-within';
import { shownPath, shownText } from '@delegate-git/core/shown-path';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';
import { governanceInForce } from '../governance-in-force.js';

const help = `
Usage: delegate-git log [<path>] [--signer <key>] [-n <count>] [--json]

The history of the records in the ledger, newest first (by the time each record says it was made), one line
each: time, verdict or review decision, signer, path, the blob it judged, and whether it counts under the trust
root in the work tree (HEAD's in a bare repository). With a path, only records about that file, or about files
under it when it names a directory. A record about several files is one line, naming the first of them (+N).
  --signer <key>            only records signed by this key: its name in the trust root, or its keyid (8 or
                            more hex digits), also when it is revoked (what a compromised key signed)
  -n, --max-count <count>   show at most this many records
  --json                    every record with all its subjects, for machines

Example:
  delegate-git log src/parser.ts
  delegate-git log src/ -n 20
  delegate-git log --signer bob
  delegate-git log --json | jq '.records[] | select(.valid | not)'
`;

/** One record as `log` shows it. */
export interface LogEntry {
  createdAt: string | null;
  kind: 'verdict' | 'review' | null;
  /** The verdict, `review:approve` / `review:reject`, or UNREADABLE for a line that is no record. */
  outcome: string;
  signer: string | null;
  /** The subjects this entry is listed for (those under the path asked about, or all). */
  subjects: Array<{ path: string; gitBlob: string; sha256: string }>;
  /** A blob whose note holds the line (for a line that is no record, the only place it can be named by). */
  noteBlob: string;
  valid: boolean;
  /** Signed by a key of the trust root that may not sign it now (revoked, role removed, outside its dates). */
  notCounted: boolean;
  reason: string;
  unit: string | null;
  /** The operator's `worker.model` setting, and the name the server's reply gave where it differed. */
  model: string | null;
  reportedModel: string | null;
  envelopeSha256: string;
}

/** A repository path, or a directory (with a trailing slash) to match everything under it; null: everything. */
export function pathFilter(top: string | null, cwd: string, target: string | undefined): string | null {
  if (target === undefined) return null;
  const within = top === null ? target : relativeWithin(top, path.resolve(cwd, target));
  if (within === null) throw usageError('log', `${target} is outside the repository at ${top}.`);
  const clean = within
    .split(path.sep)
    .join('/')
    .replace(/^\.\/+/, '')
    .replace(/\/+$/, '');
  return clean === '' || clean === '.' ? null : clean;
}

function matchesPath(filter: string | null, subjectPath: string): boolean {
  return filter === null || subjectPath === filter || subjectPath.startsWith(`${filter}/`);
}

function logEntryOf(judged: JudgedLine, filter: string | null): LogEntry | null {
  const r = judged.record;
  const base = {
    noteBlob: judged.blob,
    valid: judged.valid,
    notCounted: judged.notCounted,
    reason: judged.reason,
    signer: judged.signer,
    envelopeSha256: judged.lineSha256,
  };
  if (r === null) {
    if (filter !== null) return null;
    return {
      ...base,
      createdAt: null,
      kind: null,
      outcome: 'UNREADABLE',
      subjects: [],
      unit: null,
      model: null,
      reportedModel: null,
    };
  }
  const subjects = r.subjects
    .filter((s) => matchesPath(filter, s.path))
    .map((s) => ({ path: s.path, gitBlob: s.gitBlob, sha256: s.sha256 }));
  if (subjects.length === 0) return null;
  return {
    ...base,
    createdAt: r.createdAtText,
    kind: r.kind,
    outcome: r.kind === 'verdict' ? r.verdict : `review:${r.decision}`,
    subjects,
    unit: r.kind === 'verdict' ? unitNameOf(r.predicate) : null,
    model: r.kind === 'verdict' ? workerOf(r.predicate).model : null,
    reportedModel: r.kind === 'verdict' ? workerOf(r.predicate).reportedModel : null,
  };
}

/** Whether `key` (a key's name, or a prefix of 8 or more hex digits of its keyid) signed the line. */
function signedBy(judged: JudgedLine, key: string): boolean {
  if (judged.signer === key) return true;
  const keyid = judged.record?.envelope.signatures[0]?.keyid;
  return keyid !== undefined && isKeyidPrefix(key, keyid);
}

function isKeyidPrefix(key: string, keyid: string): boolean {
  return /^[0-9a-f]{8,64}$/.test(key) && keyid.startsWith(key);
}

function noRecords(filter: string | null, signer: string | undefined, trustRoot: TrustRoot): string {
  if (signer === undefined)
    return filter === null ? 'The ledger holds no records.' : `No records about ${filter}.`;
  const about = filter === null ? '' : ` about ${filter}`;
  const known = trustRoot.byName(signer) ?? trustRoot.keys.find((k) => isKeyidPrefix(signer, k.keyid));
  return known
    ? `No records${about} signed by ${signer}.`
    : `No records${about} signed by ${shownText(signer)}: no key of the trust root has that name or keyid (\`delegate-git keys list\`).`;
}

/**
 * Newest first by the record's own time; lines that are no record last. At the same time a rejection is the newer, as
 * the promotion rule takes it (a reviewer's rejection and approval of one instant: the rejection stands); other ties
 * in a fixed order.
 */
export function sortNewestFirst(entries: LogEntry[]): LogEntry[] {
  const time = (e: LogEntry) => (e.createdAt === null ? Number.NEGATIVE_INFINITY : Date.parse(e.createdAt));
  const rejection = (e: LogEntry) => (e.outcome === 'review:reject' ? 1 : 0);
  return entries.sort(
    (a, b) =>
      time(b) - time(a) ||
      rejection(b) - rejection(a) ||
      (a.envelopeSha256 < b.envelopeSha256 ? -1 : a.envelopeSha256 > b.envelopeSha256 ? 1 : 0),
  );
}

/** Seconds precision for the eye (the record's own text is in --json). */
function shortTime(createdAt: string | null): string {
  if (createdAt === null) return '-'.padEnd(20);
  return new Date(Date.parse(createdAt)).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function displayPath(entry: LogEntry): string {
  const [first, ...more] = entry.subjects;
  if (!first) return '-';
  return more.length > 0 ? `${shownPath(first.path)} (+${more.length})` : shownPath(first.path);
}

export function renderLog(entries: readonly LogEntry[]): string {
  const outcomeWidth = Math.max(0, ...entries.map((e) => e.outcome.length));
  const signerWidth = Math.max(1, ...entries.map((e) => (e.signer ?? '-').length));
  const pathWidth = Math.min(48, Math.max(1, ...entries.map((e) => displayPath(e).length)));
  return (
    entries
      .map((e) => {
        const blob = (e.subjects[0]?.gitBlob ?? e.noteBlob).slice(0, 12);
        const status = e.valid ? 'valid' : `${e.notCounted ? 'not counted' : 'INVALID'}(${e.reason})`;
        return [
          shortTime(e.createdAt),
          e.outcome.padEnd(outcomeWidth),
          (e.signer ?? '-').padEnd(signerWidth),
          displayPath(e).padEnd(pathWidth),
          blob,
          status,
        ].join('  ');
      })
      // One line per record, whatever its reason quotes.
      .map((line) => `${shownText(line)}\n`)
      .join('')
  );
}

export default {
  summary: 'the records in the ledger on a path (or all), newest first',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('log', argv, {
      json: { type: 'boolean' },
      'max-count': { type: 'string', short: 'n' },
      signer: { type: 'string' },
    });
    if (positionals.length > 1) throw usageError('log', 'Name at most one path.');
    const maxText = values['max-count'];
    const max = maxText === undefined ? null : Number(maxText);
    if (max !== null && (!Number.isInteger(max) || max < 0)) {
      throw usageError('log', `--max-count needs a whole number, not "${maxText}".`);
    }
    const signer = values.signer;
    if (signer === '') throw usageError('log', '--signer needs a key name or keyid.');
    const repo = await Repository.open(io.cwd, io.env, io.err);
    try {
      const filter = pathFilter(repo.layout.topLevel, io.cwd, positionals[0]);
      const governance = await governanceInForce(repo);
      const judge = { trustRoot: governance.trustRoot, repositoryId: governance.policy.repositoryId };
      const entries: LogEntry[] = [];
      for await (const judged of judgeDistinctLines(repo.ledger.entries(), judge)) {
        const entry = logEntryOf(judged, filter);
        if (entry && (signer === undefined || signedBy(judged, signer))) entries.push(entry);
      }
      const shown = sortNewestFirst(entries).slice(0, max ?? undefined);
      if (values.json) {
        io.out(json({ path: filter, trustRoot: governance.source, records: shown }));
      } else if (entries.length === 0) {
        io.out(`${noRecords(filter, signer, governance.trustRoot)}\n`);
      } else io.out(renderLog(shown));
      return 0;
    } finally {
      await repo.close();
    }
  },
} satisfies CommandModule;
