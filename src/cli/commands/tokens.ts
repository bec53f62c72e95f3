// `kiln tokens ...` (control-plane bearer tokens) and `kiln audit` (the log of mutating
// calls). Both are admin-only on the platform. Like API keys, a token is made by the
// platform, which keeps only a digest: it is printed once, at creation.

import { Option, type Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { AuditEntry, CreatedToken, Token } from '../api-types.ts';
import { integerOption } from '../arguments.ts';
import { withClient } from '../context.ts';
import { usageError } from '../errors.ts';
import { apiPath } from '../http-client.ts';
import { emit, renderKeyValues, renderTable, shortTime, type JsonOption } from '../output.ts';

const units: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `90s`, `30m`, `12h`, `7d` → seconds; commander option parser. */
export function parseDurationSeconds(text: string): number {
  const match = /^(\d{1,9})([smhd])$/.exec(text.trim());
  const seconds = match === null ? 0 : Number(match[1]) * (units[match[2] ?? ''] ?? 0);
  if (seconds < 1)
    throw new InvalidArgumentError('expected a duration like 90s, 30m, 12h or 7d (at least 1s)');
  return seconds;
}

/** `--since`: a duration back from `nowMs` (`1h`, `7d`) or an ISO 8601 time → ISO 8601. */
export function sinceTime(text: string, nowMs: number): string {
  if (/^\d+[smhd]$/.test(text.trim()))
    return new Date(nowMs - parseDurationSeconds(text) * 1000).toISOString();
  const ms = Date.parse(text);
  if (Number.isNaN(ms))
    throw usageError(
      `invalid --since "${text}"`,
      'use a duration back from now (30m, 12h, 7d) or an ISO 8601 time',
    );
  return new Date(ms).toISOString();
}

export function registerTokensCommands(program: Command): void {
  const tokens = program
    .command('tokens')
    .description('manage control-plane tokens (who may call the platform API)');

  tokens
    .command('create')
    .description('create a token; it is printed once and never shown again')
    .argument('<name>', 'token name (who uses it, e.g. ci-risk)')
    .addOption(
      new Option('--role <role>', 'reader: reads; deployer: deploys within --team; admin: all')
        .choices(['admin', 'deployer', 'reader', 'gateway'])
        .makeOptionMandatory(),
    )
    .option('--team <team>', 'the team a deployer acts within (deployer tokens only)')
    .option(
      '--expires-in <duration>',
      'expire after this long, e.g. 12h, 30d (default: never)',
      parseDurationSeconds,
    )
    .option('--json', 'print JSON (includes the token)')
    .action(
      async (
        name: string,
        options: JsonOption & { role: string; team?: string; expiresIn?: number },
        command: Command,
      ) => {
        if (options.role === 'deployer' && options.team === undefined)
          throw usageError('a deployer token needs --team');
        if (options.role !== 'deployer' && options.team !== undefined)
          throw usageError('--team is for deployer tokens only');
        const body = {
          name,
          role: options.role,
          ...(options.team === undefined ? {} : { team: options.team }),
          ...(options.expiresIn === undefined ? {} : { expiresInSeconds: options.expiresIn }),
        };
        const created = await withClient(command, (client) =>
          client.post<CreatedToken>(apiPath('tokens'), body),
        );
        emit(options, created, () => createdTokenText(created));
      },
    );

  tokens
    .command('list')
    .description('list tokens (never the tokens themselves)')
    .option('--all', 'include revoked tokens')
    .option('--json', 'print JSON')
    .action(async (options: JsonOption & { all?: boolean }, command: Command) => {
      const result = await withClient(command, (client) =>
        client.get<{ items: Token[] }>(apiPath('tokens'), {
          includeRevoked: options.all === true ? true : undefined,
        }),
      );
      emit(options, result, () =>
        result.items.length === 0 ? 'no tokens\n' : tokensTable(result.items),
      );
    });

  tokens
    .command('revoke')
    .description('revoke a token (refused by the platform from the next call on)')
    .argument('<id>', 'token id (see `kiln tokens list`)')
    .option('--json', 'print JSON')
    .action(async (id: string, options: JsonOption, command: Command) => {
      const token = await withClient(command, (client) =>
        client.delete<Token>(apiPath('tokens', id)),
      );
      emit(options, token, () => `revoked token ${token.id} (${token.name}, ${roleText(token)})\n`);
    });
}

export function registerAuditCommand(program: Command): void {
  program
    .command('audit')
    .description('list mutating API calls, newest first: who, what, when, outcome')
    .option(
      '--since <when>',
      'only calls since then: a duration back (30m, 12h, 7d) or an ISO time',
    )
    .option('--limit <n>', 'show at most N entries', integerOption(1), 100)
    .option('--json', 'print JSON')
    .action(async (options: JsonOption & { since?: string; limit: number }, command: Command) => {
      const since = options.since === undefined ? undefined : sinceTime(options.since, Date.now());
      const page = await withClient(command, (client) =>
        client.listAll<AuditEntry>(apiPath('audit'), { since }, options.limit),
      );
      emit(options, page, () =>
        page.items.length === 0 ? 'no audited calls\n' : auditTable(page.items),
      );
    });
}

export function roleText(token: Pick<Token, 'role' | 'team'>): string {
  return token.team === null ? token.role : `${token.role}, team ${token.team}`;
}

export function createdTokenText(token: CreatedToken): string {
  return (
    renderKeyValues([
      ['id', token.id],
      ['name', token.name],
      ['role', roleText(token)],
      ['expires', token.expiresAt === null ? 'never' : shortTime(token.expiresAt)],
      ['token', token.token],
    ]) + 'keep the token now: it is not shown again (use it with --token or KILN_TOKEN)\n'
  );
}

export function tokensTable(tokens: readonly Token[]): string {
  return renderTable(
    ['id', 'name', 'role', 'team', 'prefix', 'created', 'expires', 'revoked'],
    tokens.map((t) => [
      t.id,
      t.name,
      t.role,
      t.team,
      `${t.prefix}…`,
      shortTime(t.createdAt),
      t.expiresAt === null ? 'never' : shortTime(t.expiresAt),
      shortTime(t.revokedAt),
    ]),
  );
}

export function auditTable(entries: readonly AuditEntry[]): string {
  return renderTable(
    ['time', 'who', 'call', 'target', { header: 'status', align: 'right' }, 'code'],
    entries.map((e) => [
      shortTime(e.at),
      e.tokenName === null ? '(no valid token)' : visible(e.tokenName),
      visible(`${e.method} ${e.route}`),
      visible(e.target),
      e.status,
      e.code,
    ]),
  );
}

/**
 * Control characters as `\xNN`: a call's route and target are the caller's words (a refused
 * call's too, made without any token), and must not reach the reader's terminal as escapes.
 */
function visible(text: string): string {
  return text.replace(/\p{Cc}/gu, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
