#!/usr/bin/env node
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/delegate-git.js', import.meta.url);
if (!existsSync(bundle)) {
  process.stderr.write(
    'delegate-git: the CLI has not been built (packages/cli/dist is missing). Run the install step again ' +
      '(npx pnpm install builds it), or `npx pnpm build`.\n',
  );
  process.exit(2);
}
const { main } = await import(bundle.href);
process.exitCode = await main(process.argv.slice(2));
