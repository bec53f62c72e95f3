// Entry point of the `kiln` command (bin/kiln.js imports this file).

import { runCli } from './program.ts';

process.exitCode = await runCli(process.argv.slice(2));
