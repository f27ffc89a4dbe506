/**
 * The unit's targetFiles, checked before the worker is called: a target no write may ever reach (outside the
 * workspace and the emitAllowlist roots, inside a git directory, the policy or a key file) is the unit's mistake, not
 * the worker's, and found from the unit alone; otherwise the worker's time is spent and its faithful write refused.
 */
import { relativePosix } from '@delegate-git/core/path-within';
import { canonicalisePath, checkEmissionPath, isPathWithin } from './containment.js';

/** Why each target is unreachable (the emission's own words, said of the target); empty when every one may be written. */
export function unreachableTargets(
  targets: readonly string[],
  opts: {
    workspace: string;
    emitAllowlist: string[];
    gitDirs: readonly string[];
    top: string;
    governanceFile: (path: string) => boolean;
  },
): string[] {
  const top = canonicalisePath(opts.top);
  return targets.flatMap((target) => {
    // A blank target is scope.ts's to read (it covers nothing); not a place.
    if (target.trim() === '') return [];
    const where = checkEmissionPath(target, opts);
    if (!where.ok) return [`targetFiles: ${where.reason.replace(/; not written(?=\.|$)/, '')}`];
    const inTop = isPathWithin(top, where.absolute) ? relativePosix(top, where.absolute) : null;
    if (inTop && opts.governanceFile(inTop))
      return [
        `targetFiles: \`${target}\` is the policy or a key file of the trust root; only reviewers change those (a unit's verdict never promotes them)`,
      ];
    return [];
  });
}
