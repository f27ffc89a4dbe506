/** What the `report` command's text and HTML show alike: counts, and the per-signer table. */
import type { LedgerStats } from '@delegate-git/core';

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** A count as both reports print it: a whole number with thousands separators. */
export function num(n: number): string {
  return integer.format(n);
}

export const SIGNER_HEADERS = ['signer', 'delegations', 'passed', 'approvals', 'rejections', 'not counted'];

/** One row per signer, in the order of SIGNER_HEADERS. */
export function signerRows(stats: LedgerStats): string[][] {
  return stats.bySigner.map((s) => [
    s.signer,
    num(s.delegations),
    num(s.passed),
    num(s.approvals),
    num(s.rejections),
    num(s.notCounted),
  ]);
}
