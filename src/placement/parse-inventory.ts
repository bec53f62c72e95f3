// Reads a declared inventory (`kiln up --inventory FILE`, `<home>/inventory.json`) into the
// Inventory shape, checking everything a wrong file could say: a refused inventory names the
// node, the device and what is wrong with it (KILN_INVENTORY_INVALID), so a typo is caught at
// start, not discovered as a replica that never fits. Unknown fields are refused too.

import { kilnError } from '../core/errors.ts';
import type { AcceleratorDevice, Inventory, InventoryNode } from './inventory.ts';
import { migLayoutProblem, migDeviceKinds } from './mig-profiles.ts';

export const defaultHeadroom = 0.1;

const nodeNamePattern = /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/;

class InventoryProblem extends Error {}

function fail(reason: string): never {
  throw new InventoryProblem(reason);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function onlyFields(
  value: Record<string, unknown>,
  allowed: readonly string[],
  where: string,
): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) fail(`${where}: unknown field "${key}"`);
  }
}

function positive(value: unknown, where: string, options: { integer?: boolean } = {}): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${where} must be a number`);
  if (value <= 0) fail(`${where} must be > 0 (got ${value})`);
  if (options.integer === true && !Number.isInteger(value))
    fail(`${where} must be a whole number (got ${value})`);
  return value;
}

function parseDevice(value: unknown, where: string): AcceleratorDevice {
  if (!isRecord(value)) fail(`${where} must be an object`);
  onlyFields(value, ['index', 'type', 'memoryGiB', 'sharing', 'mig'], where);
  const { index, type, memoryGiB, sharing, mig } = value;
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0)
    fail(`${where}.index must be a whole number ≥ 0`);
  if (typeof type !== 'string' || type.length === 0 || type.length > 64)
    fail(`${where}.type must be a device type such as "A100-80GB"`);
  const memory = positive(memoryGiB, `${where}.memoryGiB`);
  const mode = sharing ?? 'exclusive';
  if (mode !== 'exclusive' && mode !== 'mps' && mode !== 'mig')
    fail(`${where}.sharing must be exclusive, mps or mig (got ${JSON.stringify(sharing)})`);
  if (mode !== 'mig') {
    if (mig !== undefined) fail(`${where}: MIG instances need sharing "mig"`);
    return { index, type, memoryGiB: memory, sharing: mode };
  }
  if (!Array.isArray(mig) || mig.length === 0 || !mig.every((m) => typeof m === 'string'))
    fail(`${where}.mig must list the MIG instances the device is cut into`);
  const kind = migDeviceKinds[type];
  if (kind !== undefined) {
    const whole = Math.max(...kind.profiles.map((p) => p.memoryGiB));
    if (Math.abs(whole - memory) > 1) fail(`${where}: a ${type} has ${whole} GiB, not ${memory}`);
  }
  const problem = migLayoutProblem(type, mig);
  if (problem !== null) fail(`${where}: ${problem}`);
  return { index, type, memoryGiB: memory, sharing: 'mig', mig: [...mig] };
}

function parseNode(value: unknown, where: string): InventoryNode {
  if (!isRecord(value)) fail(`${where} must be an object`);
  onlyFields(
    value,
    [
      'name',
      'cpus',
      'memoryGiB',
      'capacity',
      'instanceType',
      'costPerHour',
      'accelerators',
      'labels',
    ],
    where,
  );
  const { name, cpus, memoryGiB, capacity, instanceType, costPerHour, accelerators, labels } =
    value;
  if (typeof name !== 'string' || !nodeNamePattern.test(name))
    fail(`${where}.name must be a lowercase DNS label (letters, digits, '-', '.')`);
  const at = `node ${name}`;
  const node: {
    -readonly [K in keyof InventoryNode]: InventoryNode[K];
  } = {
    name,
    cpus: positive(cpus, `${at}: cpus`),
    memoryGiB: positive(memoryGiB, `${at}: memoryGiB`),
    capacity: 'on-demand',
    accelerators: [],
  };
  if (capacity !== undefined) {
    if (capacity !== 'spot' && capacity !== 'on-demand')
      fail(`${at}: capacity must be spot or on-demand (got ${JSON.stringify(capacity)})`);
    node.capacity = capacity;
  }
  if (instanceType !== undefined) {
    if (typeof instanceType !== 'string' || instanceType.length === 0)
      fail(`${at}: instanceType must be a string`);
    node.instanceType = instanceType;
  }
  if (costPerHour !== undefined) {
    if (typeof costPerHour !== 'number' || !Number.isFinite(costPerHour) || costPerHour < 0)
      fail(`${at}: costPerHour must be a number ≥ 0`);
    node.costPerHour = costPerHour;
  }
  if (labels !== undefined) {
    if (!isRecord(labels) || !Object.values(labels).every((v) => typeof v === 'string'))
      fail(`${at}: labels must map names to strings`);
    node.labels = labels as Record<string, string>;
  }
  if (accelerators !== undefined) {
    if (!Array.isArray(accelerators)) fail(`${at}: accelerators must be a list`);
    const devices = accelerators.map((d, i) => parseDevice(d, `${at}: accelerators[${i}]`));
    const seen = new Set<number>();
    for (const device of devices) {
      if (seen.has(device.index)) fail(`${at}: two accelerators with index ${device.index}`);
      seen.add(device.index);
    }
    node.accelerators = devices;
  }
  return node;
}

/** The inventory in `value` (parsed JSON), or KILN_INVENTORY_INVALID naming `source` and why. */
export function parseInventory(value: unknown, source: string): Inventory {
  try {
    if (!isRecord(value)) fail('must be a JSON object with "nodes"');
    onlyFields(value, ['nodes', 'headroom'], 'inventory');
    const { nodes, headroom } = value;
    if (!Array.isArray(nodes) || nodes.length === 0) fail('"nodes" must list at least one node');
    const parsed = nodes.map((n, i) => parseNode(n, `nodes[${i}]`));
    const names = new Set<string>();
    for (const node of parsed) {
      if (names.has(node.name)) fail(`two nodes named ${node.name}`);
      names.add(node.name);
    }
    if (headroom === undefined) return { nodes: parsed };
    if (typeof headroom !== 'number' || !(headroom >= 0 && headroom <= 0.5))
      fail(`headroom must be a fraction from 0 to 0.5 (got ${JSON.stringify(headroom)})`);
    return { nodes: parsed, headroom };
  } catch (error) {
    if (error instanceof InventoryProblem)
      throw kilnError('KILN_INVENTORY_INVALID', { source, reason: error.message });
    throw error;
  }
}

/** The inventory when none is declared: this machine as one on-demand node, no accelerators. */
export function localInventory(machine: {
  readonly name: string;
  readonly cpus: number;
  readonly memoryBytes: number;
}): Inventory {
  const name =
    machine.name
      .toLowerCase()
      .replace(/[^a-z0-9.-]+/g, '-')
      .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '')
      .slice(0, 63) || 'local';
  return {
    nodes: [
      {
        name,
        cpus: Math.max(1, machine.cpus),
        memoryGiB: Math.max(0.25, machine.memoryBytes / 1024 ** 3),
        capacity: 'on-demand',
        accelerators: [],
      },
    ],
  };
}
