// The drift gauges on the control plane's registry (GET /metrics), set after each collection
// round from the report over the endpoint's last two windows (the current one fills up):
//
//   kiln_feature_psi{endpoint,version,feature}        PSI vs the version's reference profile
//   kiln_output_psi{endpoint,version,output}          same, per model output
//   kiln_feature_drift_psi{endpoint,version,feature}  PSI of the latest window vs the one before
//   kiln_drift_flagged{endpoint,version}              features and outputs flagged (any slice)
//
// Series of endpoints no longer collected are dropped: the gauges are rebuilt whole, in one
// synchronous step, each round.

import { Gauge, type Registry } from 'prom-client';
import type { VersionDrift } from '../../../observability/drift/drift-report.ts';

export class DriftMetrics {
  private readonly featurePsi: Gauge;
  private readonly outputPsi: Gauge;
  private readonly featureDriftPsi: Gauge;
  private readonly flagged: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.featurePsi = new Gauge({
      name: 'kiln_feature_psi',
      help: 'PSI of a feature served (last two drift windows) against the version reference profile',
      labelNames: ['endpoint', 'version', 'feature'],
      registers,
    });
    this.outputPsi = new Gauge({
      name: 'kiln_output_psi',
      help: 'PSI of a model output served (last two drift windows) against the version reference profile',
      labelNames: ['endpoint', 'version', 'output'],
      registers,
    });
    this.featureDriftPsi = new Gauge({
      name: 'kiln_feature_drift_psi',
      help: 'PSI of a feature in the latest drift window against the window before it',
      labelNames: ['endpoint', 'version', 'feature'],
      registers,
    });
    this.flagged = new Gauge({
      name: 'kiln_drift_flagged',
      help: 'Features and outputs flagged as drifted (overall or in a slice)',
      labelNames: ['endpoint', 'version'],
      registers,
    });
  }

  /** Replaces every series with those of `reports` (endpoint → its versions' drift). */
  publish(reports: ReadonlyMap<string, readonly VersionDrift[]>): void {
    this.featurePsi.reset();
    this.outputPsi.reset();
    this.featureDriftPsi.reset();
    this.flagged.reset();
    for (const [endpoint, versions] of reports) {
      for (const drift of versions) {
        const version = String(drift.version);
        let flagged = 0;
        for (const group of drift.groups) {
          flagged += group.flagged;
          if (group.slice !== null) continue;
          for (const item of group.items) {
            const psi = item.vsReference?.psi;
            if (psi !== undefined && psi !== null) {
              if (item.kind === 'feature')
                this.featurePsi.set({ endpoint, version, feature: item.name }, psi);
              else this.outputPsi.set({ endpoint, version, output: item.name }, psi);
            }
            const previous = item.vsPrevious?.psi;
            if (item.kind === 'feature' && previous !== undefined && previous !== null)
              this.featureDriftPsi.set({ endpoint, version, feature: item.name }, previous);
          }
        }
        this.flagged.set({ endpoint, version }, flagged);
      }
    }
  }
}
