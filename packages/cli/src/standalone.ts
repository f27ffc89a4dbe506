/**
 * The single-file build (dist/delegate-git-standalone.mjs): everything in one module, for servers where an admin
 * drops one file next to Node (a GitHub Enterprise Server pre-receive environment, a GitLab Gitaly node).
 */
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
