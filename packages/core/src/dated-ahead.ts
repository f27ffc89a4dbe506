/**
 * A record's createdAt is the signer's word. One dated ahead of the clock that judges it does not count anywhere
 * (promotion, dating, `log`, `report`) and may not enter the ledger (push), until that clock reaches it.
 */

/** How a reason about such a record begins: a refusal that says it is one the clock lifts, so it is not remembered. */
export const DATED_AHEAD = 'created in the future';

/** How far a record's createdAt may run ahead of the clock that judges it: clocks drift, by seconds or minutes. */
export const CLOCK_SKEW_MS = 60 * 60 * 1000;

/**
 * Why a record dated ahead of `now` does not count, or null. An approval dated ahead counts as made after every
 * version admitted before that date: a version it approved could come back on it later, and one it admitted could
 * not be replaced until then.
 */
export function datedAhead(createdAt: number, now: number): string | null {
  if (createdAt <= now + CLOCK_SKEW_MS) return null;
  return (
    `${DATED_AHEAD}: createdAt ${new Date(createdAt).toISOString()} is more than an hour ahead of this ` +
    "machine's clock (the signer's clock is wrong: drop the line from the note on that blob, " +
    '`git notes --ref delegations edit <blob>`, and sign again with the clock set right)'
  );
}
