// Applies one evaluation's conditions (slo-evaluation.ts) to an endpoint's stored alert
// states: an alert whose condition holds and was not firing fires, one firing whose condition
// no longer holds — or that is no longer evaluated (its objective removed) — resolves. Pure:
// the caller writes the upserts and events in one store transaction and sends the events to
// the webhooks.
//
//   resolved / none ──condition holds──▶ firing ──condition gone──▶ resolved
//                                         │  ▲
//                                         └──┘ still holds: figures refreshed, no event

import type { NewSloAlertEvent, SloAlertRecord, SloAlertUpsert } from '../../store/slo-records.ts';
import type { AlertCondition } from './slo-evaluation.ts';

export interface AlertTransitions {
  /** States to write (every firing alert is refreshed; transitions included). */
  readonly upserts: readonly SloAlertUpsert[];
  /** Transitions, in condition order: what the webhooks are told. */
  readonly events: readonly NewSloAlertEvent[];
}

export function alertTransitions(
  endpoint: string,
  current: readonly SloAlertRecord[],
  conditions: readonly AlertCondition[],
  at: string,
): AlertTransitions {
  const byName = new Map(current.map((record) => [record.alert, record]));
  const upserts: SloAlertUpsert[] = [];
  const events: NewSloAlertEvent[] = [];
  const seen = new Set<string>();
  for (const condition of conditions) {
    seen.add(condition.alert);
    const before = byName.get(condition.alert);
    const wasFiring = before?.state === 'firing';
    const base = {
      endpoint,
      alert: condition.alert,
      severity: condition.severity,
      summary: condition.summary,
      detail: condition.detail,
    };
    if (condition.active && !wasFiring) {
      upserts.push({ ...base, state: 'firing', since: at });
      events.push({ ...base, state: 'firing', at });
    } else if (!condition.active && wasFiring) {
      upserts.push({ ...base, state: 'resolved', since: at });
      events.push({ ...base, state: 'resolved', at });
    } else if (condition.active && before !== undefined) {
      upserts.push({ ...base, state: 'firing', since: before.since });
    }
  }
  for (const before of current) {
    if (seen.has(before.alert) || before.state !== 'firing') continue;
    const summary = `${before.alert} is no longer evaluated (its objective was removed)`;
    const base = { ...before, summary };
    upserts.push({ ...base, state: 'resolved', since: at });
    events.push({
      endpoint,
      alert: before.alert,
      severity: before.severity,
      summary,
      detail: before.detail,
      state: 'resolved',
      at,
    });
  }
  return { upserts, events };
}
