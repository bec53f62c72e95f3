// The simulation as a picture a person opens (`kiln simulate --plot out.svg`): one panel per
// policy, stacked, sharing the time axis. In each panel demand (requests/s, arrivals) and the
// capacity of the ready replicas (requests/s they can answer) on the left axis, the replica
// count the policy wanted on the right axis. Capacity under demand is where the SLO is missed.
//
//   ┌ policy: SLO met, p99, replica-seconds ───────────────────────┐
//   │ rps ┤  demand ──  capacity ──            replicas ── ├ count  │
//   └──────────────────────── time ─────────────────────────────────┘

import type { PolicyReport, SimulationReport } from './simulation-report.ts';

const width = 960;
const panelHeight = 240;
const margin = { left: 64, right: 64, top: 40, bottom: 36 };
const colors = { demand: '#1f77b4', capacity: '#2ca02c', replicas: '#ff7f0e' } as const;

export function renderSimulationSvg(report: SimulationReport): string {
  const height = panelHeight * report.policies.length;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
      `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`,
  ];
  // One rps scale and one replica scale for every panel, so panels compare at a glance.
  const rpsMax = niceCeiling(
    Math.max(
      1,
      ...report.policies.flatMap((p) => [...p.timeline.demandRps, ...p.timeline.capacityRps]),
    ),
  );
  const replicasMax = niceCeiling(
    Math.max(1, ...report.policies.flatMap((p) => p.timeline.replicas)),
  );
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
  const yRps = (v: number): number => y0 - (v / rpsMax) * (y0 - y1);
  const yReplicas = (v: number): number => y0 - (v / replicasMax) * (y0 - y1);
  const timeline = policy.timeline;
  const step = timeline.bucketSeconds;
  const line = (values: readonly number[], y: (v: number) => number, color: string): string => {
    // A step line: each bucket's mean holds across the bucket.
    const points: string[] = [];
    values.forEach((v, i) => {
      const t = timeline.tSeconds[i] ?? 0;
      points.push(
        `${fmt(x(t))},${fmt(y(v))}`,
        `${fmt(x(Math.min(duration, t + step)))},${fmt(y(v))}`,
      );
    });
    return `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points.join(' ')}"/>`;
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
    line(timeline.capacityRps, yRps, colors.capacity),
    line(timeline.demandRps, yRps, colors.demand),
    line(timeline.replicas, yReplicas, colors.replicas),
    legend(x1 - 330, top + 18),
    `</g>`,
  );
  return out.join('\n');
}

function legend(x: number, y: number): string {
  const entries: [string, string][] = [
    ['demand rps', colors.demand],
    ['capacity rps', colors.capacity],
    ['replicas', colors.replicas],
  ];
  return entries
    .map(([label, color], i) => {
      const at = x + i * 110;
      return (
        `<line x1="${at}" y1="${y - 4}" x2="${at + 18}" y2="${y - 4}" stroke="${color}" stroke-width="2"/>` +
        `<text x="${at + 22}" y="${y}">${label}</text>`
      );
    })
    .join('\n');
}

function timeLabel(t: number, duration: number): string {
  if (duration >= 2 * 86_400) return `day ${fmt(t / 86_400)}`;
  if (duration >= 2 * 3600) return `${fmt(t / 3600)} h`;
  if (duration >= 120) return `${fmt(t / 60)} min`;
  return `${fmt(t)} s`;
}

/** 1, 2 or 5 × a power of ten, at least value. */
function niceCeiling(value: number): number {
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  for (const factor of [1, 2, 5, 10]) if (factor * power >= value) return factor * power;
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
