// Part of the test command: in CI (CI=true), make sure Debian's chromium is there for the HTML report's
// headless-browser test, installing it if needed. Elsewhere it does nothing (that test then skips and says so).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

if (
  process.env.CI === 'true' &&
  !existsSync('/usr/bin/chromium') &&
  process.env.DELEGATE_GIT_SKIP_BROWSER !== '1'
) {
  const script = new URL('../.ci/ensure-chromium', import.meta.url).pathname;
  const r = spawnSync('bash', [script], { stdio: 'inherit' });
  process.exitCode = r.status ?? 1;
}
