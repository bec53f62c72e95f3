// The MIG (Multi-Instance GPU) profiles each device type can be cut into, from NVIDIA's MIG
// user guide ("Supported MIG Profiles"). A GPU has a fixed number of compute slices (7 on
// A100/H100/H200, 4 on A30) and memory slices (8, or 4 on A30); a profile `Ng.Mgb` takes N
// compute slices and enough memory slices for its memory, and at most `maxInstances` of it
// fit on one GPU. An inventory whose instances need more slices than the device has cannot
// be created on real hardware: it is refused (KILN_INVENTORY_INVALID), never half-trusted.
//
// The `+me` profiles (one media-extensions instance per GPU) are left out: they carry the
// same memory as their plain twin and change nothing placement can see.

export interface MigProfile {
  readonly name: string;
  readonly computeSlices: number;
  readonly memorySlices: number;
  /** What a replica placed on the instance may use, in GiB. */
  readonly memoryGiB: number;
  readonly maxInstances: number;
}

export interface MigDeviceKind {
  readonly computeSlices: number;
  readonly memorySlices: number;
  readonly profiles: readonly MigProfile[];
}

function profile(
  name: string,
  computeSlices: number,
  memorySlices: number,
  memoryGiB: number,
  maxInstances: number,
): MigProfile {
  return { name, computeSlices, memorySlices, memoryGiB, maxInstances };
}

/** By device type, as `AcceleratorDevice.type` names it. */
export const migDeviceKinds: Readonly<Record<string, MigDeviceKind>> = {
  'A100-40GB': {
    computeSlices: 7,
    memorySlices: 8,
    profiles: [
      profile('1g.5gb', 1, 1, 5, 7),
      profile('1g.10gb', 1, 2, 10, 4),
      profile('2g.10gb', 2, 2, 10, 3),
      profile('3g.20gb', 3, 4, 20, 2),
      profile('4g.20gb', 4, 4, 20, 1),
      profile('7g.40gb', 7, 8, 40, 1),
    ],
  },
  'A100-80GB': {
    computeSlices: 7,
    memorySlices: 8,
    profiles: [
      profile('1g.10gb', 1, 1, 10, 7),
      profile('1g.20gb', 1, 2, 20, 4),
      profile('2g.20gb', 2, 2, 20, 3),
      profile('3g.40gb', 3, 4, 40, 2),
      profile('4g.40gb', 4, 4, 40, 1),
      profile('7g.80gb', 7, 8, 80, 1),
    ],
  },
  'H100-80GB': {
    computeSlices: 7,
    memorySlices: 8,
    profiles: [
      profile('1g.10gb', 1, 1, 10, 7),
      profile('1g.20gb', 1, 2, 20, 4),
      profile('2g.20gb', 2, 2, 20, 3),
      profile('3g.40gb', 3, 4, 40, 2),
      profile('4g.40gb', 4, 4, 40, 1),
      profile('7g.80gb', 7, 8, 80, 1),
    ],
  },
  'H100-94GB': {
    computeSlices: 7,
    memorySlices: 8,
    profiles: [
      profile('1g.12gb', 1, 1, 12, 7),
      profile('1g.24gb', 1, 2, 24, 4),
      profile('2g.24gb', 2, 2, 24, 3),
      profile('3g.47gb', 3, 4, 47, 2),
      profile('4g.47gb', 4, 4, 47, 1),
      profile('7g.94gb', 7, 8, 94, 1),
    ],
  },
  'H200-141GB': {
    computeSlices: 7,
    memorySlices: 8,
    profiles: [
      profile('1g.18gb', 1, 1, 18, 7),
      profile('1g.35gb', 1, 2, 35, 4),
      profile('2g.35gb', 2, 2, 35, 3),
      profile('3g.71gb', 3, 4, 71, 2),
      profile('4g.71gb', 4, 4, 71, 1),
      profile('7g.141gb', 7, 8, 141, 1),
    ],
  },
  'A30-24GB': {
    computeSlices: 4,
    memorySlices: 4,
    profiles: [
      profile('1g.6gb', 1, 1, 6, 4),
      profile('2g.12gb', 2, 2, 12, 2),
      profile('4g.24gb', 4, 4, 24, 1),
    ],
  },
};

/** The profile of this name on this device type; null: the type has no such profile. */
export function migProfile(deviceType: string, name: string): MigProfile | null {
  return migDeviceKinds[deviceType]?.profiles.find((p) => p.name === name) ?? null;
}

/**
 * Why these instances cannot be cut from one device of this type, or null when they can:
 * more compute or memory slices than the device has, or more of one profile than fit.
 */
export function migLayoutProblem(deviceType: string, names: readonly string[]): string | null {
  const kind = migDeviceKinds[deviceType];
  if (kind === undefined) {
    return `device type ${deviceType} does not support MIG (known: ${Object.keys(migDeviceKinds).join(', ')})`;
  }
  let compute = 0;
  let memory = 0;
  const counts = new Map<string, number>();
  for (const name of names) {
    const found = kind.profiles.find((p) => p.name === name);
    if (found === undefined) {
      return `MIG profile ${name} is not valid for ${deviceType} (valid: ${kind.profiles.map((p) => p.name).join(', ')})`;
    }
    compute += found.computeSlices;
    memory += found.memorySlices;
    const count = (counts.get(name) ?? 0) + 1;
    counts.set(name, count);
    if (count > found.maxInstances) {
      return `${count} × ${name} exceed ${deviceType}: at most ${found.maxInstances}`;
    }
  }
  if (compute > kind.computeSlices) {
    return `MIG instances ${names.join(', ')} need ${compute} compute slices, ${deviceType} has ${kind.computeSlices}`;
  }
  if (memory > kind.memorySlices) {
    return `MIG instances ${names.join(', ')} need ${memory} memory slices, ${deviceType} has ${kind.memorySlices}`;
  }
  return null;
}
