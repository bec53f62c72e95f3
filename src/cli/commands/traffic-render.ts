// Human renderings of an endpoint's traffic (`kiln traffic show`), its history (`kiln
// endpoints history`) and its shadows' report (`kiln shadow report`). Pure string builders.

import type { ShadowReport, TrafficEvent, TrafficView } from '../api-types.ts';
import { renderKeyValues, renderTable, shortTime } from '../output.ts';

interface Ref {
  readonly model: string;
  readonly version: number;
}

function ref(version: Ref): string {
  return `${version.model}:${version.version}`;
}

/** `fraud:1 95%, fraud:2 5%` */
export function splitText(split: readonly (Ref & { readonly weight: number })[]): string {
  return split.map((v) => `${ref(v)} ${v.weight}%`).join(', ');
}

export function trafficDetails(view: TrafficView): string {
  const policy = view.policy;
  const shadows = policy?.shadows ?? [];
  const sticky =
    policy === null
      ? undefined
      : `${policy.keyPath === null ? 'header kiln-user' : `header kiln-user, else ${policy.keyPath}`} (salt ${policy.salt})`;
  const slices =
    policy === null || policy.sliceKey === null
      ? undefined
      : `${policy.sliceKey}: header kiln-slice${policy.slicePath === null ? '' : `, else ${policy.slicePath}`}`;
  const rollout = view.rollout;
  return renderKeyValues([
    ['endpoint', view.endpoint],
    ['stable', `${ref(view.stable)} (deployed as ${view.stable.ref})`],
    ['split', splitText(view.split) + (policy === null ? ' (no policy)' : '')],
    ['shadows', shadows.map((s) => `${ref(s)} ${percent(s.sampleRate)}`).join(', ')],
    ['sticky', sticky],
    ['slices', slices],
    ['previous', view.previous === null ? null : ref(view.previous)],
    ['warm', view.warm.map((w) => `${ref(w)} until ${shortTime(w.until)}`).join(', ')],
    ['staged', view.staged.map(ref).join(', ')],
    [
      'rollout',
      rollout === null
        ? null
        : `${rollout.id} (${rollout.strategy}, ${rollout.state}) to ${ref(rollout.canary)}` +
          (rollout.stepIndex < 0
            ? ''
            : `, step ${rollout.stepIndex + 1}/${rollout.steps.length} at ${rollout.steps[rollout.stepIndex] ?? '?'}%`),
    ],
    [
      'experiment',
      view.experiment === null ? null : `${view.experiment.id} (${view.experiment.name})`,
    ],
    ['revision', view.revision],
    ['updated', view.updatedAt === null ? null : shortTime(view.updatedAt)],
  ]);
}

export function historyTable(events: readonly TrafficEvent[]): string {
  return renderTable(
    ['time', 'action', 'actor', 'reason', 'change'],
    events.map((event) => [
      shortTime(event.at),
      event.action,
      event.actor,
      event.reason,
      changeText(event.detail),
    ]),
  );
}

/** What an event's detail says changed, in a few words. */
function changeText(detail: unknown): string {
  if (typeof detail !== 'object' || detail === null) return '';
  const fields = detail as Record<string, unknown>;
  if (typeof fields['summary'] === 'string') return fields['summary'];
  if (typeof fields['to'] === 'string') {
    const from = typeof fields['from'] === 'string' ? `${fields['from']} → ` : '';
    return `${from}${fields['to']}`;
  }
  const after = fields['after'];
  if (after === null) return 'policy cleared';
  if (Array.isArray(after)) {
    const shadows = after as (Ref & { sampleRate: number })[];
    return shadows.length === 0
      ? 'no shadows'
      : `shadows ${shadows.map((s) => `${ref(s)} ${percent(s.sampleRate)}`).join(', ')}`;
  }
  if (typeof after === 'object' && after !== null && 'versions' in after) {
    return splitText((after as { versions: (Ref & { weight: number })[] }).versions);
  }
  return controllerChangeText(fields);
}

/**
 * The details rollouts, blue-green switches, experiments and the reconciler write
 * (rollout-changes.ts, experiments.ts, reconciler.ts): without these the history's CHANGE
 * column would be empty for most of what moves traffic.
 */
function controllerChangeText(fields: Record<string, unknown>): string {
  const text = (name: string): string | undefined =>
    typeof fields[name] === 'string' ? fields[name] : undefined;
  const weights = fields['weights'];
  if (typeof weights === 'object' && weights !== null) {
    const split = Object.entries(weights as Record<string, number>)
      .map(([version, weight]) => `${version} ${weight}%`)
      .join(', ');
    return typeof fields['step'] === 'number' && typeof fields['of'] === 'number'
      ? `step ${fields['step']}/${fields['of']}: ${split}`
      : split;
  }
  if (Array.isArray(fields['variants'])) {
    return splitText(fields['variants'] as (Ref & { weight: number })[]);
  }
  if (typeof fields['policyRemoved'] === 'boolean') {
    return fields['policyRemoved'] ? 'policy cleared' : 'policy unchanged';
  }
  const baseline = text('baseline');
  const canary = text('canary');
  const stable = text('stable');
  const previous = text('previous');
  if (baseline !== undefined && canary !== undefined) return `${baseline} → ${canary} (staged)`;
  if (previous !== undefined && stable !== undefined) return `${previous} → ${stable}`;
  if (canary !== undefined && stable !== undefined) return `${canary} dropped, ${stable} stays`;
  if (typeof fields['step'] === 'number' && typeof fields['of'] === 'number') {
    return `at step ${fields['step']}/${fields['of']}`;
  }
  if (Array.isArray(fields['versions'])) {
    return `stopped ${(fields['versions'] as Ref[]).map(ref).join(', ')}`;
  }
  return '';
}

export function shadowReportText(report: ShadowReport): string {
  const window = `since ${shortTime(report.since)} (until ${shortTime(report.until)})`;
  if (report.shadows.length === 0) return `endpoint ${report.endpoint}: no shadows ${window}\n`;
  const ms = (value: number | undefined): string =>
    value === undefined ? '-' : value >= 100 ? value.toFixed(0) : value.toFixed(1);
  const number = (value: number | null): string =>
    value === null
      ? '-'
      : Math.abs(value) >= 0.01 || value === 0
        ? value.toFixed(4)
        : value.toExponential(2);
  const table = renderTable(
    [
      'shadow',
      { header: 'rate', align: 'right' },
      { header: 'offered', align: 'right' },
      { header: 'sent', align: 'right' },
      { header: 'dropped', align: 'right' },
      { header: 'errors', align: 'right' },
      { header: 'agree', align: 'right' },
      { header: 'mean |diff|', align: 'right' },
      { header: 'max |diff|', align: 'right' },
      { header: 'p50 ms', align: 'right' },
      { header: 'p99 ms', align: 'right' },
      { header: 'primary p50/p99', align: 'right' },
    ],
    report.shadows.map((s) => [
      ref(s),
      s.sampleRate === null ? '-' : percent(s.sampleRate),
      s.offered,
      s.sent,
      s.dropped,
      s.errors,
      s.agreementRate === null
        ? '-'
        : `${(s.agreementRate * 100).toFixed(1)}% (${s.agreed}/${s.compared})`,
      number(s.absDiff.mean),
      number(s.absDiff.max),
      ms(s.latencyMs?.p50),
      ms(s.latencyMs?.p99),
      s.primaryLatencyMs === null
        ? '-'
        : `${ms(s.primaryLatencyMs.p50)}/${ms(s.primaryLatencyMs.p99)}`,
    ]),
  );
  return `endpoint ${report.endpoint}, shadows ${window}\n${table}`;
}

function percent(rate: number): string {
  return `${Number((rate * 100).toFixed(2))}%`;
}
