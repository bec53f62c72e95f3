// Post-processors from tokenizer.json: add special tokens around an encoded sequence when the
// caller asks for them (`addSpecialTokens`, the default). Llama-2 and Llama-3 use
// TemplateProcessing with `single` = [<bos>, $A]; Llama-3 wraps it in a Sequence after a
// ByteLevel processor, which only trims offsets and so changes no ids.

import {
  componentType,
  fail,
  isJsonObject,
  succeed,
  type JsonObject,
  type TokenizerResult,
} from './tokenizer-result.ts';

/** Ids to put before and after the sequence's own ids. */
export interface SpecialTokenFrame {
  readonly before: readonly number[];
  readonly after: readonly number[];
}

const noFrame: SpecialTokenFrame = { before: [], after: [] };

/** The frame described by `json` (null: none), or the construct we do not support. */
export function parsePostProcessor(json: unknown): TokenizerResult<SpecialTokenFrame> {
  if (json === null || json === undefined) return succeed(noFrame);
  if (!isJsonObject(json)) return fail('post_processor must be an object or null');
  const type = componentType(json);
  switch (type) {
    case 'Sequence': {
      if (!Array.isArray(json.processors)) return fail('Sequence post_processor: no "processors"');
      const before: number[] = [];
      const after: number[] = [];
      for (const item of json.processors) {
        const step = parsePostProcessor(item);
        if (!step.ok) return step;
        // Each step wraps what the previous ones produced.
        before.unshift(...step.value.before);
        after.push(...step.value.after);
      }
      return succeed({ before, after });
    }
    case 'ByteLevel':
      return succeed(noFrame);
    case 'TemplateProcessing':
      return templateProcessing(json);
    case 'RobertaProcessing':
    case 'BertProcessing': {
      const cls = tokenPair(json.cls);
      const sep = tokenPair(json.sep);
      if (cls === null || sep === null) return fail(`${type}: "cls" and "sep" must be [token, id]`);
      return succeed({ before: [cls], after: [sep] });
    }
    default:
      return fail(`unsupported post_processor type: ${type}`);
  }
}

function tokenPair(value: unknown): number | null {
  if (!Array.isArray(value) || value.length !== 2) return null;
  const id: unknown = value[1];
  return typeof id === 'number' && Number.isInteger(id) && id >= 0 ? id : null;
}

/** `single`: a list of {SpecialToken: {id}} and one {Sequence: {id: "A"}}. */
function templateProcessing(json: JsonObject): TokenizerResult<SpecialTokenFrame> {
  if (!Array.isArray(json.single)) return fail('TemplateProcessing: "single" must be an array');
  const specials = isJsonObject(json.special_tokens) ? json.special_tokens : {};
  const before: number[] = [];
  const after: number[] = [];
  let seenSequence = false;
  for (const piece of json.single as unknown[]) {
    if (isJsonObject(piece) && isJsonObject(piece.Sequence)) {
      if (piece.Sequence.id !== 'A') {
        return fail('TemplateProcessing: "single" may only use sequence A');
      }
      if (seenSequence) return fail('TemplateProcessing: "single" uses sequence A twice');
      seenSequence = true;
      continue;
    }
    if (!isJsonObject(piece) || !isJsonObject(piece.SpecialToken)) {
      return fail('TemplateProcessing: each "single" piece is a SpecialToken or a Sequence');
    }
    const name = piece.SpecialToken.id;
    const special = typeof name === 'string' ? specials[name] : undefined;
    if (!isJsonObject(special) || !Array.isArray(special.ids)) {
      return fail(`TemplateProcessing: special token ${String(name)} has no ids`);
    }
    const ids: unknown[] = special.ids;
    if (!ids.every((id) => typeof id === 'number' && Number.isInteger(id) && id >= 0)) {
      return fail(`TemplateProcessing: special token ${String(name)} has an invalid id`);
    }
    (seenSequence ? after : before).push(...(ids as number[]));
  }
  if (!seenSequence) return fail('TemplateProcessing: "single" has no sequence');
  return succeed({ before, after });
}
