import { generateSigningKey, saveSigningKey, signingKeyDir } from '@delegate-git/core';
import { type CommandModule, type Io, json, parseCommandArgs, usageError } from '../command.js';

const help = `
Usage: delegate-git keygen <name> [--json]

Generates an Ed25519 signing key and saves it as PKCS#8 PEM with mode 0600 in
$XDG_CONFIG_HOME/delegate-git/keys/<name>.key (default ~/.config/...). The private key never enters a
repository. Prints the public key, to register with \`delegate-git keys add\`.

Example:
  delegate-git keygen alice
  delegate-git keys add alice --public-key <printed base64> --roles reviewer --email alice@example.com
`;

export default {
  summary: 'generate a personal Ed25519 signing key (outside the repository)',
  help,
  async run(argv: string[], io: Io): Promise<number> {
    const { values, positionals } = parseCommandArgs('keygen', argv, { json: { type: 'boolean' } });
    const [name, ...extra] = positionals;
    if (!name || extra.length > 0) throw usageError('keygen', 'Give exactly one key name.');
    const key = generateSigningKey();
    const file = saveSigningKey(name, key, io.env);
    const result = { name, file, publicKey: key.publicKey.base64, keyid: key.publicKey.keyid };
    if (values.json) io.out(json(result));
    else {
      io.out(`Saved ${file} (mode 0600, in ${signingKeyDir(io.env)}).\n`);
      io.out(`public key: ${result.publicKey}\nkeyid:      ${result.keyid}\n`);
      io.out(
        `Register it: delegate-git keys add ${name} --public-key ${result.publicKey} --roles delegator,reviewer --email <your email>\n`,
      );
    }
    return 0;
  },
} satisfies CommandModule;
