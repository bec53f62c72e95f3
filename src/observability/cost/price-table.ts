// The price table cost reports charge replica time by (`kiln up --prices FILE`, else
// `<home>/prices.json`, else `defaultPriceTable`): USD per CPU-hour, per GiB-hour of memory and
// per accelerator-hour by device type, each for on-demand and spot capacity. Pure: the control
// plane reads the file (control/observability/load-prices.ts) and hands the JSON here.
//
// A replica is charged for what it asks (its resources, as placement packs them), not for
// what it uses: that is what the capacity costs whoever holds it. The defaults are round
// figures of public cloud list prices, good enough to compare endpoints, not to pay a bill.

import { kilnError } from '../../core/errors.ts';

/** USD per hour of one unit, by capacity kind. */
export interface UnitPrice {
  readonly onDemandUsdPerHour: number;
  readonly spotUsdPerHour: number;
}

export interface PriceTable {
  readonly cpu: UnitPrice;
  readonly memoryGiB: UnitPrice;
  /** By device type (`A100-80GB`); `*` prices any type not listed. Per whole device. */
  readonly accelerators: Readonly<Record<string, UnitPrice>>;
}

export const defaultPriceTable: PriceTable = {
  cpu: { onDemandUsdPerHour: 0.04, spotUsdPerHour: 0.012 },
  memoryGiB: { onDemandUsdPerHour: 0.005, spotUsdPerHour: 0.0015 },
  accelerators: {
    T4: { onDemandUsdPerHour: 0.53, spotUsdPerHour: 0.16 },
    L4: { onDemandUsdPerHour: 0.81, spotUsdPerHour: 0.25 },
    A10G: { onDemandUsdPerHour: 1.21, spotUsdPerHour: 0.36 },
    'A100-40GB': { onDemandUsdPerHour: 3.67, spotUsdPerHour: 1.1 },
    'A100-80GB': { onDemandUsdPerHour: 4.1, spotUsdPerHour: 1.23 },
    'H100-80GB': { onDemandUsdPerHour: 6.98, spotUsdPerHour: 2.1 },
    H200: { onDemandUsdPerHour: 8.0, spotUsdPerHour: 2.4 },
    '*': { onDemandUsdPerHour: 2.0, spotUsdPerHour: 0.6 },
  },
};

/** What one replica holds while it runs (its instance shape), as usage rows record it. */
export interface ReplicaShape {
  readonly cpu: number;
  readonly memoryGiB: number;
  /** The device type it holds; null: none. */
  readonly acceleratorType: string | null;
  /** Devices it holds, fractions for a share (an MPS memory share, a MIG instance). */
  readonly accelerators: number;
  readonly capacity: 'spot' | 'on-demand';
}

const topFields = ['cpu', 'memoryGiB', 'accelerators'] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks a price table file's JSON and fills what it leaves out: a missing `cpu` or
 * `memoryGiB` takes the default; `accelerators`, when given, replaces the default list whole
 * (a team pricing its own devices should not inherit ours by accident); a missing `spot`
 * price is the on-demand one. Throws KILN_PRICES_INVALID naming the entry.
 */
export function parsePriceTable(value: unknown, source: string): PriceTable {
  const fail = (reason: string): never => {
    throw kilnError('KILN_PRICES_INVALID', { source, reason });
  };
  if (!isRecord(value)) return fail('the price table must be a JSON object');
  for (const key of Object.keys(value))
    if (!(topFields as readonly string[]).includes(key))
      fail(`unknown entry "${key}" (known: ${topFields.join(', ')})`);
  const unit = (entry: unknown, at: string): UnitPrice => {
    if (!isRecord(entry)) return fail(`${at} must be an object such as {"onDemand": 0.04}`);
    for (const key of Object.keys(entry))
      if (key !== 'onDemand' && key !== 'spot')
        fail(`${at}: unknown field "${key}" (known: onDemand, spot)`);
    const price = (field: 'onDemand' | 'spot'): number | undefined => {
      const v = entry[field];
      if (v === undefined) return undefined;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
        fail(`${at}.${field} must be a price in USD per hour >= 0 (got ${JSON.stringify(v)})`);
      return v as number;
    };
    const onDemand = price('onDemand');
    if (onDemand === undefined) return fail(`${at}.onDemand is required`);
    return { onDemandUsdPerHour: onDemand, spotUsdPerHour: price('spot') ?? onDemand };
  };
  const accelerators: Record<string, UnitPrice> = {};
  if (value.accelerators !== undefined) {
    if (!isRecord(value.accelerators))
      fail('accelerators must be an object of device type → price, e.g. {"L4": {"onDemand": 0.8}}');
    for (const [type, entry] of Object.entries(value.accelerators as Record<string, unknown>)) {
      if (type.length === 0 || type.length > 64)
        fail(`accelerators: device type ${JSON.stringify(type)} must be 1 to 64 characters`);
      accelerators[type] = unit(entry, `accelerators.${type}`);
    }
  }
  return {
    cpu: value.cpu === undefined ? defaultPriceTable.cpu : unit(value.cpu, 'cpu'),
    memoryGiB:
      value.memoryGiB === undefined
        ? defaultPriceTable.memoryGiB
        : unit(value.memoryGiB, 'memoryGiB'),
    accelerators: value.accelerators === undefined ? defaultPriceTable.accelerators : accelerators,
  };
}

function perHour(price: UnitPrice, capacity: 'spot' | 'on-demand'): number {
  return capacity === 'spot' ? price.spotUsdPerHour : price.onDemandUsdPerHour;
}

/** The accelerator price of a device type (`*` for types not listed); null: unpriced. */
export function acceleratorPrice(prices: PriceTable, type: string): UnitPrice | null {
  return prices.accelerators[type] ?? prices.accelerators['*'] ?? null;
}

/**
 * USD per hour of one replica of this shape: CPU + memory + its share of devices. An
 * accelerator type the table does not price (no entry, no `*`) adds 0; the report lists it.
 */
export function shapeUsdPerHour(prices: PriceTable, shape: ReplicaShape): number {
  let usd = shape.cpu * perHour(prices.cpu, shape.capacity);
  usd += shape.memoryGiB * perHour(prices.memoryGiB, shape.capacity);
  if (shape.acceleratorType !== null && shape.accelerators > 0) {
    const price = acceleratorPrice(prices, shape.acceleratorType);
    if (price !== null) usd += shape.accelerators * perHour(price, shape.capacity);
  }
  return usd;
}
