import { describe, expect, it } from 'vitest';
import { CLOCK_SKEW_MS, datedAhead } from '../src/dated-ahead.js';

describe('datedAhead', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  it('allows a clock up to an hour ahead, and names a later date', () => {
    expect(datedAhead(now, now)).toBeNull();
    expect(datedAhead(now - 365 * 24 * 3600 * 1000, now)).toBeNull(); // the past is not its business
    expect(datedAhead(now + CLOCK_SKEW_MS, now)).toBeNull();
    expect(datedAhead(now + CLOCK_SKEW_MS + 1, now)).toBe(
      "created in the future: createdAt 2026-12-01T13:00:00.001Z is more than an hour ahead of this machine's clock (the signer's clock is wrong: drop the line from the note on that blob, `git notes --ref delegations edit <blob>`, and sign again with the clock set right)",
    );
  });
});
