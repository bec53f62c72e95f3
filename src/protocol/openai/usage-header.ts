// How an LLM worker tells the gateway the tokens of an answer (issue 15 E, cost): the
// `kiln-usage` header of a whole answer, or the trailer of the same name at the end of a
// stream (declared by `trailer: kiln-usage`), whatever the client asked of `usage`. The
// gateway reads it, adds the counts to its load report and passes neither on.
//
//   kiln-usage: prompt=12;completion=34

export const usageHeader = 'kiln-usage';

export interface TokenCounts {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export function formatUsageHeader(counts: TokenCounts): string {
  return `prompt=${counts.promptTokens};completion=${counts.completionTokens}`;
}

/** The counts, or null when the value is not `prompt=N;completion=M` with whole N, M. */
export function parseUsageHeader(value: string): TokenCounts | null {
  const match = /^prompt=(\d{1,12});completion=(\d{1,12})$/.exec(value.trim());
  if (match === null) return null;
  return { promptTokens: Number(match[1]), completionTokens: Number(match[2]) };
}
