// An upload progress bar on stderr: one line redrawn in place (`\r`), at most ~10 times a
// second, showing bytes done/total, throughput and a bar. Only drawn when stderr is a TTY;
// otherwise every method is a no-op, so pipes and CI logs stay clean.

import { humanSize } from './output.ts';

/** Uploads smaller than this finish before a bar would be worth drawing. */
export const progressThresholdBytes = 4 * 1024 * 1024;

export interface ProgressSink {
  add(bytes: number): void;
  finish(): void;
}

export const silentProgress: ProgressSink = { add: () => undefined, finish: () => undefined };

export interface ProgressOptions {
  readonly label: string;
  readonly totalBytes: number;
  readonly stream?: NodeJS.WriteStream;
  readonly now?: () => number;
}

/** A bar when it is wanted (TTY, large enough, not disabled); otherwise a silent sink. */
export function createProgress(
  options: ProgressOptions & { readonly enabled: boolean },
): ProgressSink {
  const stream = options.stream ?? process.stderr;
  if (!options.enabled || stream.isTTY !== true || options.totalBytes <= progressThresholdBytes) {
    return silentProgress;
  }
  return new ProgressBar({ ...options, stream });
}

export class ProgressBar implements ProgressSink {
  private readonly label: string;
  private readonly totalBytes: number;
  private readonly stream: NodeJS.WriteStream;
  private readonly now: () => number;
  private readonly startedMs: number;
  private doneBytes = 0;
  private lastDrawMs = -Infinity;
  private finished = false;

  constructor(options: ProgressOptions & { readonly stream: NodeJS.WriteStream }) {
    this.label = options.label;
    this.totalBytes = options.totalBytes;
    this.stream = options.stream;
    this.now = options.now ?? Date.now;
    this.startedMs = this.now();
  }

  add(bytes: number): void {
    this.doneBytes += bytes;
    const nowMs = this.now();
    if (nowMs - this.lastDrawMs >= 100) {
      this.lastDrawMs = nowMs;
      this.draw(nowMs);
    }
  }

  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.draw(this.now());
    this.stream.write('\n');
  }

  private draw(nowMs: number): void {
    const columns = this.stream.columns > 0 ? this.stream.columns : 80;
    this.stream.write(
      `\r${progressLine(this.label, this.doneBytes, this.totalBytes, nowMs - this.startedMs, columns)}`,
    );
  }
}

/** `label [#####-----]  12.0 MiB/48.0 MiB  8.00 MiB/s`, fitted to `columns`. Pure, for tests. */
export function progressLine(
  label: string,
  doneBytes: number,
  totalBytes: number,
  elapsedMs: number,
  columns: number,
): string {
  const fraction = totalBytes > 0 ? Math.min(1, doneBytes / totalBytes) : 1;
  const rate = elapsedMs > 0 ? (doneBytes * 1000) / elapsedMs : 0;
  const figures = `${humanSize(doneBytes)}/${humanSize(totalBytes)}  ${humanSize(rate)}/s`;
  const barWidth = Math.max(10, Math.min(40, columns - label.length - figures.length - 8));
  const filled = Math.round(fraction * barWidth);
  const line = `${label} [${'#'.repeat(filled)}${'-'.repeat(barWidth - filled)}] ${figures}`;
  // Pad so a shorter line fully overwrites the previous one; trim so it never wraps.
  return line.padEnd(columns - 1).slice(0, columns - 1);
}
