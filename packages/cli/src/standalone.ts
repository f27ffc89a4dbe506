/**
 * The single-file build (dist/delegate-git-standalone.mjs): everything in one module, for servers where an admin
 * drops one file next to Node (a GitHub Enterprise Server pre-receive environment, a GitLab Gitaly node).
 */
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { hooksRun } from './hook-install.js';
import { main } from './main.js';

hooksRun(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
// As bin/delegate-git.js does for the server hook (see there): V8's optimizing compiler tiers up later.
if (argv[0] === 'hook' && argv[1] === 'pre-receive') setFlagsFromString('--interrupt-budget=1000000');
const code = await main(argv);
// An output that could not be written may have set 2 already (command.ts): the higher code stands.
process.exitCode = Math.max(code, Number(process.exitCode ?? 0));
