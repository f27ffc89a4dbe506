/**
 * in-toto Statement v1 as delegate-git writes it (DESIGN 3.2). The promotion rule reads only the fields typed
 * as required here; everything else in a predicate is informative, so records written by other tools that
 * carry just those fields are still judged.
 */
/** The tool every record names as its writer (a verdict's `tool`, a report's `toolVersion`). */
export const TOOL = { name: 'delegate-git', version: '0.1.0' } as const;

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const VERDICT_PREDICATE = 'urn:delegate-git:verdict:v1';
export const REVIEW_PREDICATE = 'urn:delegate-git:review:v1';

export const VERDICTS = [
  'UNIT_PASSED',
  'UNIT_FAILED',
  'UNIT_FLAKY',
  'UNIT_UNVERIFIED',
  'INCOHERENT',
  'CONTRACT_MODIFIED',
  'VERIFICATION_NOT_APPROVED',
  'CONTEXT_REFUSED',
  'WORKER_ERROR',
  'NO_CHANGES',
] as const;
export type VerdictName = (typeof VERDICTS)[number];

export interface Subject {
  name: string;
  digest: { sha256: string; gitBlob: string };
}

export interface Statement<P = Record<string, unknown>> {
  _type: typeof STATEMENT_TYPE;
  subject: Subject[];
  predicateType: string;
  predicate: P;
}

export interface VerdictPredicate {
  verdict: VerdictName;
  repository: { id: string; baseCommit?: string };
  createdAt: string;
  [informative: string]: unknown;
}

export interface ReviewPredicate {
  decision: 'approve' | 'reject';
  reviewer: { name: string; email: string };
  comment?: string;
  reviewed?: string[];
  repository: { id: string };
  createdAt: string;
  [informative: string]: unknown;
}

export interface SubjectFile {
  path: string;
  sha256: string;
  gitBlob: string;
}

function subjectsOf(files: SubjectFile[]): Subject[] {
  return files.map((f) => ({ name: f.path, digest: { sha256: f.sha256, gitBlob: f.gitBlob } }));
}

export function verdictStatement(
  files: SubjectFile[],
  predicate: VerdictPredicate,
): Statement<VerdictPredicate> {
  return { _type: STATEMENT_TYPE, subject: subjectsOf(files), predicateType: VERDICT_PREDICATE, predicate };
}

export function reviewStatement(
  files: SubjectFile[],
  predicate: ReviewPredicate,
): Statement<ReviewPredicate> {
  return { _type: STATEMENT_TYPE, subject: subjectsOf(files), predicateType: REVIEW_PREDICATE, predicate };
}

/** RFC 3339 UTC with millisecond precision, the one form records carry. */
export function rfc3339(date: Date = new Date()): string {
  return date.toISOString();
}

/** RFC 3339 allows `t` and `z` in lower case, and UTC written as the offset `+00:00` (or `-00:00`, UTC too). */
const RFC3339_UTC = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|[+-]00:00)$/;

/**
 * Milliseconds since the epoch of an RFC 3339 UTC time (`2026-01-31T12:00:00Z`, fraction optional), or null. Other
 * writers write UTC in the other forms RFC 3339 allows (Python's `isoformat()` ends in `+00:00`), and all name the
 * same instant; an offset other than zero is refused, as not UTC.
 * Date.parse alone is too lenient to decide a key's validity window: it reads "March 1, 2026 Z" and rolls
 * 2026-02-30 over to March 2, so two verifiers could place the same record at different times. One strict
 * reading instead: the form above, and a date and time that exist (no roll-over, no 24:00, no leap second).
 */
export function parseRfc3339Utc(text: string): number | null {
  const m = RFC3339_UTC.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const millis = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3));
  const time = new Date(Date.UTC(year, month - 1, day, hour, minute, second, millis));
  time.setUTCFullYear(year); // Date.UTC maps years 0-99 to 1900-1999
  const exists =
    time.getUTCFullYear() === year &&
    time.getUTCMonth() === month - 1 &&
    time.getUTCDate() === day &&
    time.getUTCHours() === hour &&
    time.getUTCMinutes() === minute &&
    time.getUTCSeconds() === second;
  return exists ? time.getTime() : null;
}
