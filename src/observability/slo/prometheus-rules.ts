// The endpoints' SLOs as Prometheus rules (`kiln slo rules`, GET /api/v1/slo/rules), for
// teams that alert from Prometheus rather than from Kiln's webhooks: recording rules on the
// gateway's metrics for every window the burn-rate pairs read, and the same multi-window
// alerts the control plane evaluates (burn-rate.ts). Pure; the output is YAML that
// `promtool check rules` accepts (test/observability/slo/prometheus-rules.test.ts).
//
// What Prometheus measures differs from the control plane's SLIs in one way: the gateway's
// latency histogram (kiln_gateway_request_duration_seconds) counts every answer, errors
// included, and has fixed buckets, so a latency objective is checked at the smallest bucket
// bound at or above latencyMs (said in a comment above its rules).

import type { SloConfig } from '../../store/observability-config.ts';
import { burnRules, windowName, type SliName } from './burn-rate.ts';

export interface EndpointSlo {
  readonly endpoint: string;
  readonly slo: SloConfig;
}

/**
 * The gateway's latency histogram buckets (kiln_gateway_request_duration_seconds, seconds),
 * copied so this module stays pure; a test compares them with what a gateway exposes.
 */
export const durationBuckets: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

const windows = [...new Set(burnRules.flatMap((r) => [r.shortMs, r.longMs]))]
  .sort((a, b) => a - b)
  .map(windowName);

/** Recording rule names: `kiln:slo_<sli>_errors:ratio_rate<window>`. */
export function ratioRecord(sli: SliName, window: string): string {
  return `kiln:slo_${sli}_errors:ratio_rate${window}`;
}

/** A PromQL (and YAML double-quoted) string literal. */
function quoted(text: string): string {
  return JSON.stringify(text);
}

function block(indent: string, text: string): string {
  return text
    .split('\n')
    .map((line) => `${indent}${line}`)
    .join('\n');
}

interface Rule {
  readonly comment?: string;
  readonly record?: string;
  readonly alert?: string;
  readonly expr: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

function ruleYaml(rule: Rule): string {
  const lines: string[] = [];
  if (rule.comment !== undefined) lines.push(`      # ${rule.comment}`);
  if (rule.record !== undefined) lines.push(`      - record: ${rule.record}`);
  if (rule.alert !== undefined) lines.push(`      - alert: ${rule.alert}`);
  lines.push('        expr: |-', block('          ', rule.expr));
  for (const key of ['labels', 'annotations'] as const) {
    const map = rule[key];
    if (map === undefined) continue;
    lines.push(`        ${key}:`);
    for (const [name, value] of Object.entries(map))
      lines.push(`          ${name}: ${quoted(value)}`);
  }
  return lines.join('\n');
}

function groupYaml(name: string, rules: readonly Rule[]): string {
  return [`  - name: ${quoted(name)}`, '    rules:', ...rules.map(ruleYaml)].join('\n');
}

/** The availability error ratios of every endpoint (one group: the same rules for all). */
function availabilityRecords(): Rule[] {
  return windows.map((window) => ({
    record: ratioRecord('availability', window),
    expr:
      `sum by (endpoint) (rate(kiln_gateway_requests_total{code=~"5.."}[${window}]))\n` +
      `/\n` +
      `sum by (endpoint) (rate(kiln_gateway_requests_total[${window}]))`,
  }));
}

/** The gateway's bucket bound (seconds) a latency objective is checked at; null: none. */
export function latencyBucketSeconds(latencyMs: number): number | null {
  return durationBuckets.find((bound) => bound * 1000 >= latencyMs - 1e-9) ?? null;
}

function alertName(sli: SliName | 'drift', severity: string): string {
  const title = sli === 'availability' ? 'Availability' : sli === 'latency' ? 'Latency' : 'Drift';
  const level = severity === 'page' ? 'Page' : 'Ticket';
  return sli === 'drift' ? 'KilnDriftPsiAboveCeiling' : `Kiln${title}BurnRate${level}`;
}

function endpointRules(entry: EndpointSlo): { comments: string[]; rules: Rule[] } {
  const { endpoint, slo } = entry;
  const match = `endpoint=${quoted(endpoint)}`;
  const comments: string[] = [];
  const rules: Rule[] = [];
  const objectives: { sli: SliName; objective: number }[] = [];
  if (slo.availability !== null)
    objectives.push({ sli: 'availability', objective: slo.availability });
  if (slo.latencyMs !== null && slo.latencyTarget !== null) {
    const bound = latencyBucketSeconds(slo.latencyMs);
    if (bound === null) {
      comments.push(
        `latency objective ${slo.latencyMs} ms is above the gateway's largest latency bucket ` +
          `(${durationBuckets.at(-1) ?? 0} s): checked by Kiln only`,
      );
    } else {
      comments.push(
        `latency objective ${slo.latencyMs} ms checked at the gateway's bucket le="${bound}" (seconds)`,
      );
      for (const window of windows) {
        rules.push({
          record: ratioRecord('latency', window),
          expr:
            `1 - (\n` +
            `  sum by (endpoint) (rate(kiln_gateway_request_duration_seconds_bucket{${match},le="${bound}"}[${window}]))\n` +
            `  /\n` +
            `  sum by (endpoint) (rate(kiln_gateway_request_duration_seconds_count{${match}}[${window}]))\n` +
            `)`,
        });
      }
      objectives.push({ sli: 'latency', objective: slo.latencyTarget });
    }
  }
  for (const { sli, objective } of objectives) {
    const budget = Number((1 - objective).toPrecision(12));
    for (const rule of burnRules) {
      const long = windowName(rule.longMs);
      const short = windowName(rule.shortMs);
      rules.push({
        alert: alertName(sli, rule.severity),
        expr:
          `${ratioRecord(sli, long)}{${match}} > (${rule.factor} * ${budget})\n` +
          `and\n` +
          `${ratioRecord(sli, short)}{${match}} > (${rule.factor} * ${budget})`,
        labels: { severity: rule.severity, slo: sli },
        annotations: {
          summary: `${endpoint}: ${sli} error budget burning above ${rule.factor}x over ${long} and ${short}`,
          description: `objective ${objective}${sli === 'latency' ? ` within ${slo.latencyMs} ms` : ''}; see docs/slo.md`,
        },
      });
    }
  }
  if (slo.driftPsiCeiling !== null) {
    rules.push({
      alert: alertName('drift', 'ticket'),
      expr: `max by (endpoint, version, feature) (kiln_feature_psi{${match}}) > ${slo.driftPsiCeiling}`,
      labels: { severity: 'ticket', slo: 'drift' },
      annotations: {
        summary: `${endpoint}: a feature's PSI is above the ceiling ${slo.driftPsiCeiling}`,
        description:
          'kiln_feature_psi is served by the control plane (GET /metrics); see docs/drift.md',
      },
    });
  }
  return { comments, rules };
}

/** The rules file for these endpoints (sorted by name); a file with no groups when none. */
export function prometheusRules(endpoints: readonly EndpointSlo[]): string {
  const sorted = [...endpoints].sort((a, b) => a.endpoint.localeCompare(b.endpoint));
  const head = [
    "# Kiln SLO rules, generated by `kiln slo rules` from the endpoints' SLOs (docs/slo.md).",
    '# Multi-window, multi-burn-rate alerts (SRE workbook): page when the 1h and 5m burn rates',
    '# both exceed 14.4, ticket when the 6h and 30m ones both exceed 6.',
  ];
  const groups: string[] = [];
  const notes: string[] = [];
  if (sorted.some((e) => e.slo.availability !== null)) {
    groups.push(groupYaml('kiln-slo-availability', availabilityRecords()));
  }
  for (const entry of sorted) {
    const { comments, rules } = endpointRules(entry);
    const said = comments.map((c) => `# ${entry.endpoint}: ${c}`);
    if (rules.length === 0) {
      notes.push(...said);
      continue;
    }
    groups.push(
      [...said.map((c) => `  ${c}`), groupYaml(`kiln-slo-${entry.endpoint}`, rules)].join('\n'),
    );
  }
  if (groups.length === 0) return [...head, ...notes, 'groups: []', ''].join('\n');
  return [...head, ...notes, 'groups:', ...groups, ''].join('\n');
}
