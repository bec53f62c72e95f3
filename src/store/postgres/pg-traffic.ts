// PostgreSQL store, traffic tables: the PostgreSQL counterpart of the SQLite store's methods
// named below (same semantics, same errors; the contract suite runs on both).

import type { Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type { PgDatabase } from './pg-database.ts';
import { notImplemented } from './not-implemented.ts';

export type TrafficTablesMethods = Pick<
  Store,
  | 'getEndpointTraffic'
  | 'listEndpointTraffic'
  | 'updateEndpointTraffic'
  | 'appendTrafficEvent'
  | 'listTrafficEvents'
  | 'getRollout'
  | 'getActiveRollout'
  | 'listRollouts'
  | 'getExperiment'
  | 'listExperiments'
>;

export class PgTrafficTables implements TrafficTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  readonly getEndpointTraffic: Store['getEndpointTraffic'] = notImplemented('getEndpointTraffic');
  readonly listEndpointTraffic: Store['listEndpointTraffic'] =
    notImplemented('listEndpointTraffic');
  readonly updateEndpointTraffic: Store['updateEndpointTraffic'] =
    notImplemented('updateEndpointTraffic');
  readonly appendTrafficEvent: Store['appendTrafficEvent'] = notImplemented('appendTrafficEvent');
  readonly listTrafficEvents: Store['listTrafficEvents'] = notImplemented('listTrafficEvents');
  readonly getRollout: Store['getRollout'] = notImplemented('getRollout');
  readonly getActiveRollout: Store['getActiveRollout'] = notImplemented('getActiveRollout');
  readonly listRollouts: Store['listRollouts'] = notImplemented('listRollouts');
  readonly getExperiment: Store['getExperiment'] = notImplemented('getExperiment');
  readonly listExperiments: Store['listExperiments'] = notImplemented('listExperiments');
}
