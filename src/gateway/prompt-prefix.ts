// The prompt's first block, as the key of prefix affinity (prefix-affinity.ts). A worker's
// prefix cache shares full KV blocks of 16 tokens by default, about 64 characters of text:
// two prompts alike in those are likely to share the cached blocks of a replica that has
// served one of them (a shared system prompt is the common case). Only the start is read,
// so the cost does not grow with the prompt.
//
//   completions: the prompt's first 64 characters (the first prompt of a list; token-id
//                prompts: their first 16 ids)
//   chat:        the first message (the system prompt when there is one), role and text,
//                cut to 64 characters

/** Characters of text taken as the first block. */
export const prefixChars = 64;
/** Token ids taken as the first block of a token prompt. */
export const prefixTokens = 16;

export type OpenAiRoute = 'completions' | 'chat';

/** The key of the request's first block, or null when its prompt has none to read. */
export function promptPrefix(
  route: OpenAiRoute,
  body: Readonly<Record<string, unknown>>,
): string | null {
  return route === 'completions' ? completionPrefix(body.prompt) : chatPrefix(body.messages);
}

function completionPrefix(prompt: unknown): string | null {
  if (typeof prompt === 'string') return prompt.length === 0 ? null : prompt.slice(0, prefixChars);
  if (!Array.isArray(prompt) || prompt.length === 0) return null;
  const first: unknown = prompt[0];
  if (typeof first === 'number') return tokenPrefix(prompt);
  if (Array.isArray(first)) return first.length === 0 ? null : tokenPrefix(first);
  return completionPrefix(first);
}

function tokenPrefix(ids: readonly unknown[]): string {
  return `#${ids.slice(0, prefixTokens).join(',')}`;
}

function chatPrefix(messages: unknown): string | null {
  if (!Array.isArray(messages) || messages.length === 0) return null;
  const first: unknown = messages[0];
  if (typeof first !== 'object' || first === null) return null;
  const { role, content } = first as { role?: unknown; content?: unknown };
  const text = `${typeof role === 'string' ? role : ''}:${contentText(content)}`;
  return text.slice(0, prefixChars);
}

/** A message's text: a string, or its text parts joined (as a chat template renders them). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content.slice(0, prefixChars);
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (text.length >= prefixChars) break;
    const value = (part as { text?: unknown } | null)?.text;
    if (typeof value === 'string') text += value;
  }
  return text;
}
