// bench/llm-serving.ts part (d): the same skewed workload through the gateway of a platform
// serving the tiny Llama on two replicas, once per routing policy — the gateway's default
// (`load-prefix`: queue depth, KV utilization, prefix affinity from the replicas' reports)
// and `round-robin` — each on a fresh platform whose gateway process is started with
// KILN_LLM_ROUTING set. Nothing else differs between the two runs.

import { table, formatNumber } from './_report.ts';
import {
  mergeRuns,
  runOpenLoop,
  summarize,
  summaryCells,
  summaryHeaders,
  type RunResult,
} from './_llm-drive.ts';
import { openAiSender, startLlmPlatform } from './_llm-http.ts';
import { mixedWorkload, meanOf, type Corpus, type WorkloadRequest } from './_llm-workload.ts';

const policies = ['load-prefix', 'round-robin'] as const;
type Policy = (typeof policies)[number];

/**
 * The gateway's `kiln_gateway_llm_routed_total` by reason (affinity, least_loaded,
 * round_robin) after a run, appended to what earlier runs of the policy counted.
 */
async function routedCounts(gatewayUrl: string, earlier: string | undefined): Promise<string> {
  try {
    const response = await fetch(`${gatewayUrl}/metrics`);
    const text = await response.text();
    const counts = [...text.matchAll(/^kiln_gateway_llm_routed_total\{([^}]*)\} (\S+)$/gm)].map(
      (m) => `${/reason="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '?'} ${m[2]}`,
    );
    const now = counts.length === 0 ? '(no kiln_gateway_llm_routed_total)' : counts.join(', ');
    return earlier === undefined ? now : `${earlier}; ${now}`;
  } catch (error) {
    return `(metrics unavailable: ${String(error)})`;
  }
}

export interface RoutingOutcome {
  /** p99 TTFT of load-prefix ÷ round-robin's; NaN when a run could not happen. */
  readonly ratio: number;
  /** What kept the comparison from running ('' when it ran). */
  readonly note: string;
}

export async function runRoutingComparison(options: {
  readonly modelDir: string;
  readonly corpus: Corpus;
  readonly workload: readonly WorkloadRequest[];
  readonly rate: number;
  /** Runs per policy, alternated A B B A …. */
  readonly rounds: number;
}): Promise<RoutingOutcome> {
  const { workload } = options;
  const long = workload.filter((r) => r.kind === 'long');
  console.log(
    `\n(d) two replicas (one engine thread each) behind the gateway, OpenAI streaming completions: ${workload.length} requests, Poisson at ${options.rate} req/s; ${long.length} long (prompt mean ${meanOf(long, (r) => r.promptTokens.length).toFixed(0)} tokens), ${workload.length - long.length} short (mean ${meanOf(
      workload.filter((r) => r.kind !== 'long'),
      (r) => r.promptTokens.length,
    ).toFixed(
      0,
    )}, one of 4 system prompts); max_tokens mean ${meanOf(workload, (r) => r.maxTokens).toFixed(0)}`,
  );
  const runs = new Map<Policy, RunResult[]>(policies.map((p) => [p, []]));
  const routed = new Map<Policy, string>();
  // A B B A (…): on a shared machine the speed drifts during a run; alternating the policies
  // and pooling their runs keeps that drift from favouring the one that ran first.
  const order: Policy[] = [];
  for (let i = 0; i < options.rounds; i++)
    order.push(...(i % 2 === 0 ? policies : [...policies].reverse()));
  for (const policy of order) {
    let platform;
    try {
      platform = await startLlmPlatform({
        modelDir: options.modelDir,
        replicas: 2,
        llm: { threads: 1, maxWaiting: 4096 },
        env: { KILN_LLM_ROUTING: policy },
        timeoutMs: 120_000,
      });
    } catch (error) {
      return {
        ratio: Number.NaN,
        note: `(d) not measured: the platform could not serve the model on two replicas (${error instanceof Error ? error.message : String(error)})`,
      };
    }
    const sender = openAiSender(platform.gatewayUrl, platform.endpoint);
    try {
      // Warm both replicas with requests unlike the workload's.
      const warm = mixedWorkload(options.corpus, {
        seed: 998,
        count: 16,
        ratePerS: 200,
        promptTokens: { min: 16, max: 300 },
        outputTokens: { min: 8, max: 32 },
      });
      await runOpenLoop(warm, sender);
      const run = await runOpenLoop(workload, sender);
      const failures = run.timings.filter((t) => t.error !== null);
      if (failures.length > 0)
        console.log(`${policy}: ${failures.length} failed, first: ${failures[0]!.error}`);
      runs.get(policy)!.push(run);
      routed.set(policy, await routedCounts(platform.gatewayUrl, routed.get(policy)));
    } finally {
      await sender.close();
      await platform.close();
    }
  }
  const results = new Map(
    policies.map((policy) => {
      const run = mergeRuns(runs.get(policy)!);
      return [
        policy,
        {
          all: summarize(run),
          long: summarize(run, (t) => t.request.kind === 'long'),
          short: summarize(run, (t) => t.request.kind !== 'long'),
        },
      ];
    }),
  );
  const rows: (string | number)[][] = [];
  for (const policy of policies) {
    const r = results.get(policy)!;
    rows.push([`${policy}, all`, ...summaryCells(r.all)]);
    rows.push([`${policy}, long`, ...summaryCells(r.long)]);
    rows.push([`${policy}, short`, ...summaryCells(r.short)]);
  }
  console.log(table(['routing', ...summaryHeaders], rows));
  const ours = results.get('load-prefix')!.all.ttftP99Ms;
  const roundRobin = results.get('round-robin')!.all.ttftP99Ms;
  const ratio = ours / roundRobin;
  for (const policy of policies) console.log(`${policy}: routed ${routed.get(policy)}`);
  console.log(
    `p99 TTFT load-prefix ÷ round-robin: ${formatNumber(ratio)} (${formatNumber(ours)} vs ${formatNumber(roundRobin)} ms)`,
  );
  return { ratio, note: '' };
}
