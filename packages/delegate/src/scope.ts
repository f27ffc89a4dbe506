/**
 * Unit scope: a worker writes only inside the targets its unit declared. The declaration is the architect's
 * (model input), the switch that lifts it is the operator's (`unitScope: "off"`). Containment has already kept
 * the path inside the workspace; this narrows it to what the unit said it would touch.
 */
import { relativePosix } from '@delegate-git/core/path-within';
import { canonicaliseAgainst, canonicalisePath, isPathWithin } from './containment.js';

export type UnitScopeMode = 'enforce' | 'off';

export type ScopeDecision = { ok: true } | { ok: false; reason: string };

/**
 * Allows `absolutePath` if it is within any declared target (resolved against the workspace and canonicalised):
 * a file target covers itself, a directory target its subtree, so `src`, `src/`, `./src/a.ts` and
 * `src/../src/a.ts` all work while `src-extra/a.ts` does not. No declared targets (the field left out, or an empty
 * list) covers nothing: a unit that does not say what it touches may write nothing, since otherwise leaving the
 * field out would let the worker write anywhere in the workspace (a CI workflow, `package.json`, `.gitattributes`).
 */
export function evaluateUnitScope(
  absolutePath: string,
  opts: { workspace: string; targetFiles: string[]; unitScope: UnitScopeMode },
): ScopeDecision {
  if (opts.unitScope === 'off') return { ok: true };
  const declared = opts.targetFiles.map((target) => target.trim()).filter((target) => target !== '');
  const workspace = canonicalisePath(opts.workspace);
  const candidate = canonicalisePath(absolutePath);
  const shown = relativePosix(workspace, candidate) || '.';
  if (declared.length === 0) {
    return {
      ok: false,
      reason:
        `\`${shown}\` was not written: the unit declares no targetFiles, so nothing may be written. Declare the ` +
        'files it may write in the unit\'s targetFiles, or an operator can set unitScope: "off" to lift the check.',
    };
  }
  const covers = (target: string): boolean => {
    try {
      return isPathWithin(canonicaliseAgainst(workspace, target), candidate);
    } catch {
      return false; // an unresolvable target (symlink loop) covers nothing
    }
  };
  if (declared.some(covers)) {
    return { ok: true };
  }
  return {
    ok: false,
    reason:
      `\`${shown}\` is outside the unit's declared targetFiles (${declared.map((t) => `\`${t}\``).join(', ')}); ` +
      'not written. Declare it in the unit\'s targetFiles, or an operator can set unitScope: "off" to lift the check.',
  };
}
