// The simulation as a picture a person opens (`kiln simulate --plot out.svg`): one panel per
// policy, stacked, sharing the time axis. In each panel demand (requests/s, arrivals, a line)
// and the capacity of the ready replicas (requests/s they can answer, a shaded area) on the
// left axis, the replica count the policy wanted (dashed) on the right axis. Demand above
// the shaded area is where requests queue and the SLO is missed.
//
//   ┌ policy: SLO met, p99, replica-seconds ───────────────────────┐
//   │ (replicas share the capacity scale: one replica = its rps)    │
//   │ rps ┤  demand ──  capacity ──            replicas ── ├ count  │
//   └──────────────────────── time ─────────────────────────────────┘

import type { PolicyReport, SimulationReport } from './simulation-report.ts';

const width = 960;
const panelHeight = 240;
const margin = { left: 64, right: 64, top: 48, bottom: 36 };
const colors = { demand: '#1f77b4', capacity: '#2ca02c', replicas: '#ff7f0e' } as const;

export function renderSimulationSvg(report: SimulationReport): string {
  const height = panelHeight * report.policies.length;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
  ];
  // One scale for every panel, so panels compare at a glance: requests/s up to 1.6 × the
  // peak demand (capacity far above demand is clipped: it is not what the plot is about),
  // and replicas on the same scale as capacity (one replica = its requests/s), so the
  // replicas line lies on the capacity line once they are ready and the gap between them
  // is the start-up time.
  const rpsMax = niceCeiling(
    Math.max(1, ...report.policies.flatMap((p) => p.timeline.demandRps)) * 1.6,
  );
  const rpsPerReplica = (report.concurrencyPerReplica * 1000) / report.meanServiceMs;
  const replicasMax = rpsMax / rpsPerReplica;
  report.policies.forEach((policy, index) => {
    parts.push(panel(report, policy, index * panelHeight, rpsMax, replicasMax));
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function panel(
  report: SimulationReport,
  policy: PolicyReport,
  top: number,
  rpsMax: number,
  replicasMax: number,
): string {
  const x0 = margin.left;
  const x1 = width - margin.right;
  const y0 = top + panelHeight - margin.bottom; // bottom of the plot area
  const y1 = top + margin.top;
  const duration = Math.max(1, report.durationSeconds);
  const x = (t: number): number => x0 + (t / duration) * (x1 - x0);
  const clip = (y: number): number => Math.max(y1, Math.min(y0, y));
  const yRps = (v: number): number => clip(y0 - (v / rpsMax) * (y0 - y1));
  const yReplicas = (v: number): number => clip(y0 - (v / replicasMax) * (y0 - y1));
  const timeline = policy.timeline;
  const step = timeline.bucketSeconds;
  // Step lines: each bucket's mean holds across the bucket.
  const stepPoints = (values: readonly number[], y: (v: number) => number): string[] => {
    const points: string[] = [];
    values.forEach((v, i) => {
      const t = timeline.tSeconds[i] ?? 0;
      points.push(
        `${fmt(x(t))},${fmt(y(v))}`,
        `${fmt(x(Math.min(duration, t + step)))},${fmt(y(v))}`,
      );
    });
    return points;
  };
  const line = (values: readonly number[], y: (v: number) => number, style: string): string =>
    `<polyline fill="none" ${style} points="${stepPoints(values, y).join(' ')}"/>`;
  // Capacity as a shaded area: demand above it is load the ready replicas cannot answer.
  const area = (values: readonly number[]): string => {
    const points = stepPoints(values, yRps);
    if (points.length > 0) points.push(`${fmt(x(duration))},${fmt(y0)}`, `${fmt(x0)},${fmt(y0)}`);
    return `<polygon fill="${colors.capacity}" fill-opacity="0.3" stroke="none" points="${points.join(' ')}"/>`;
  };
  const title =
    `${policy.name} (${policy.instanceType}): SLO met ${(policy.sloAttainment * 100).toFixed(3)}%, ` +
    `p99 ${policy.p99Ms === null ? '-' : policy.p99Ms.toFixed(0)} ms, ` +
    `${policy.replicaSeconds.toFixed(0)} replica-s, ${policy.scaleUps + policy.scaleDowns} scale events, ` +
    `${policy.coldStarts} cold starts`;
  const out = [
    `<g>`,
    `<text x="${x0}" y="${top + 18}" font-size="13" font-weight="bold">${escapeXml(title)}</text>`,
    `<rect x="${x0}" y="${y1}" width="${x1 - x0}" height="${y0 - y1}" fill="none" stroke="#999999"/>`,
  ];
  for (const fraction of [0, 0.5, 1]) {
    const y = y0 - fraction * (y0 - y1);
    out.push(
      `<line x1="${x0}" y1="${fmt(y)}" x2="${x1}" y2="${fmt(y)}" stroke="#eeeeee"/>`,
      `<text x="${x0 - 6}" y="${fmt(y + 4)}" text-anchor="end">${fmt(rpsMax * fraction)}</text>`,
      `<text x="${x1 + 6}" y="${fmt(y + 4)}">${fmt(replicasMax * fraction)}</text>`,
    );
  }
  for (let i = 0; i <= 6; i++) {
    const t = (duration * i) / 6;
    out.push(
      `<text x="${fmt(x(t))}" y="${y0 + 16}" text-anchor="middle">${escapeXml(timeLabel(t, duration))}</text>`,
    );
  }
  out.push(
    `<text x="${x0 - 44}" y="${fmt((y0 + y1) / 2)}" transform="rotate(-90 ${x0 - 44} ${fmt((y0 + y1) / 2)})" text-anchor="middle">requests/s</text>`,
    `<text x="${x1 + 44}" y="${fmt((y0 + y1) / 2)}" transform="rotate(90 ${x1 + 44} ${fmt((y0 + y1) / 2)})" text-anchor="middle">replicas</text>`,
    area(timeline.capacityRps),
    line(
      timeline.replicas,
      yReplicas,
      `stroke="${colors.replicas}" stroke-width="1.5" stroke-dasharray="5 3"`,
    ),
    line(timeline.demandRps, yRps, `stroke="${colors.demand}" stroke-width="1.5"`),
    // A row of its own under the title: beside it, a title of ~95 characters ran under it.
    legend(x0, top + 36),
    `</g>`,
  );
  return out.join('\n');
}

function legend(x: number, y: number): string {
  return [
    `<line x1="${x}" y1="${y - 4}" x2="${x + 18}" y2="${y - 4}" stroke="${colors.demand}" stroke-width="2"/>`,
    `<text x="${x + 22}" y="${y}">demand rps</text>`,
    `<rect x="${x + 110}" y="${y - 9}" width="18" height="10" fill="${colors.capacity}" fill-opacity="0.3"/>`,
    `<text x="${x + 132}" y="${y}">capacity rps (ready)</text>`,
    `<line x1="${x + 260}" y1="${y - 4}" x2="${x + 278}" y2="${y - 4}" stroke="${colors.replicas}" stroke-width="2" stroke-dasharray="5 3"/>`,
    `<text x="${x + 282}" y="${y}">replicas wanted</text>`,
  ].join('\n');
}

function timeLabel(t: number, duration: number): string {
  if (duration >= 2 * 86_400) return `day ${fmt(t / 86_400)}`;
  if (duration >= 2 * 3600) return `${fmt(t / 3600)} h`;
  if (duration >= 120) return `${fmt(t / 60)} min`;
  return `${fmt(t)} s`;
}

/** A round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × a power of ten) at least value. */
function niceCeiling(value: number): number {
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  for (const factor of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) {
    if (factor * power >= value) return factor * power;
  }
  return 10 * power;
}

function fmt(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1).replace(/\.0$/, '');
}

function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}
