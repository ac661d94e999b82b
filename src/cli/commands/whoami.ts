/** `session-etl whoami`: the signed-in user, from the identity lookup (the token is refreshed first if needed). */
import type { Command } from 'commander';
import { createTokenSetup } from '../../auth/from-config.js';
import { getCurrentUser } from '../../identity/get-current-user.js';
import { defaultDeps, loadConfig, println, TOKEN_SETTINGS, type InterfaceCommandDeps } from './auth.js';

export function register(program: Command, deps: InterfaceCommandDeps = defaultDeps()): void {
  program
    .command('whoami')
    .description('Show the signed-in user: user name, given and family name, id, account keys (GET {API_URL}/identity/v1/Users/me).')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig(deps, [...TOKEN_SETTINGS, 'apiUrl']);
      const { manager } = createTokenSetup(config, deps);
      const user = await getCurrentUser({
        apiUrl: config.apiUrl!,
        accessToken: () => manager.getAccessToken(),
        ...(deps.fetch ? { fetch: deps.fetch } : {}),
      });
      if (opts.json) {
        const { record: _record, ...shown } = user;
        println(deps.stdout, JSON.stringify(shown, null, 2));
        return;
      }
      const name = [user.givenName, user.familyName].filter(Boolean).join(' ');
      println(deps.stdout, `${user.userName}${name ? ` (${name})` : ''}`);
      println(deps.stdout, `  id:           ${user.id}`);
      println(deps.stdout, `  account keys: ${user.accountKeys.length > 0 ? user.accountKeys.join(', ') : '(none)'}`);
    });
}
