// A config value as it should appear in an error message: JSON text, or "nothing" when absent.
// Callers may pass anything (readLlamaConfig takes `unknown`), so this never throws.

export function describeJsonValue(value: unknown): string {
  if (value === undefined) return 'nothing (the field is missing)';
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined; // BigInt, cycles: not JSON, so not from config.json
  }
  if (text === undefined) return `a ${typeof value}`;
  // Keep messages one line: a huge nested object is not worth printing whole.
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
