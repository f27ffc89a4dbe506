/**
 * The single-file build (dist/delegate-git-standalone.mjs): everything in one module, for servers where an admin
 * drops one file next to Node (a GitHub Enterprise Server pre-receive environment, a GitLab Gitaly node).
 */
import { fileURLToPath } from 'node:url';
import { hooksRun } from './hook-install.js';
import { main } from './main.js';

hooksRun(fileURLToPath(import.meta.url));
const code = await main(process.argv.slice(2));
// An output that could not be written may have set 2 already (command.ts): the higher code stands.
process.exitCode = Math.max(code, Number(process.exitCode ?? 0));
