// `POST /v1/chat/completions`: the body read into a typed request, or an OpenAI-shaped 400
// naming the field at fault (`messages[2].content`, `top_logprobs`, …). Messages are what a
// chat template takes: system (or OpenAI's newer `developer`, the same thing to a template),
// user and assistant turns whose content is a string or text parts. There are no tools here:
// tool definitions, tool calls and `tool` messages are refused, not silently dropped.

import type { ChatMessage } from '../../llm/tokenizer/chat-template/chat-template.ts';
import {
  absent,
  FieldProblem,
  parseRequest,
  readBoolean,
  readInteger,
  typeName,
  type Body,
  type GenerationFields,
  type ParsedRequest,
  type RequestLimits,
} from './request-fields.ts';

export interface ChatRequest extends GenerationFields {
  /** Roles system / user / assistant, content as one string (text parts joined). */
  readonly messages: readonly ChatMessage[];
  /** Return each output token's log-probability. */
  readonly logprobs: boolean;
  /** And this many of the most likely tokens at each position (0–20). */
  readonly topLogprobs: number;
}

export const maxTopLogprobs = 20;

const roles: Readonly<Record<string, string>> = {
  system: 'system',
  developer: 'system',
  user: 'user',
  assistant: 'assistant',
};

function readContent(value: unknown, param: string): string | FieldProblem {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const texts: string[] = [];
    for (const [j, part] of value.entries()) {
      const at = `${param}[${j}]`;
      if (typeof part !== 'object' || part === null || Array.isArray(part))
        return new FieldProblem(at, `${at} must be a content part object, not ${typeName(part)}`);
      const { type, text } = part as Body;
      if (type !== 'text')
        return new FieldProblem(
          `${at}.type`,
          `${at}.type ${JSON.stringify(type)} is not supported: this model takes text parts only`,
        );
      if (typeof text !== 'string')
        return new FieldProblem(`${at}.text`, `${at}.text must be a string, not ${typeName(text)}`);
      texts.push(text);
    }
    // What vLLM does for a template that takes string content: the parts joined by newlines.
    return texts.join('\n');
  }
  return new FieldProblem(
    param,
    `${param} must be a string or an array of text parts, not ${typeName(value)}`,
  );
}

function readMessages(body: Body): ChatMessage[] | FieldProblem {
  const value = body.messages;
  if (absent(value)) return new FieldProblem('messages', 'messages is required');
  if (!Array.isArray(value))
    return new FieldProblem('messages', `messages must be an array, not ${typeName(value)}`);
  if (value.length === 0) return new FieldProblem('messages', 'messages must not be empty');
  const messages: ChatMessage[] = [];
  for (const [i, item] of value.entries()) {
    const at = `messages[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      return new FieldProblem(at, `${at} must be an object, not ${typeName(item)}`);
    const message = item as Body;
    const role = message.role;
    if (typeof role !== 'string')
      return new FieldProblem(`${at}.role`, `${at}.role must be a string, not ${typeName(role)}`);
    const mapped = roles[role];
    if (mapped === undefined)
      return new FieldProblem(
        `${at}.role`,
        role === 'tool' || role === 'function'
          ? `${at}.role "${role}": tool messages are not supported by this server`
          : `${at}.role must be one of system, developer, user, assistant, not ${JSON.stringify(role)}`,
      );
    const toolCalls = message.tool_calls;
    if (!absent(toolCalls) && !(Array.isArray(toolCalls) && toolCalls.length === 0))
      return new FieldProblem(`${at}.tool_calls`, 'tool calls are not supported by this server');
    if (!absent(message.function_call))
      return new FieldProblem(
        `${at}.function_call`,
        'function calls are not supported by this server',
      );
    if (!('content' in message) || (message.content === null && mapped !== 'assistant'))
      return new FieldProblem(`${at}.content`, `${at}.content is required`);
    const content = message.content === null ? '' : readContent(message.content, `${at}.content`);
    if (content instanceof FieldProblem) return content;
    const name = message.name;
    if (!absent(name) && typeof name !== 'string')
      return new FieldProblem(`${at}.name`, `${at}.name must be a string, not ${typeName(name)}`);
    messages.push(
      typeof name === 'string' ? { role: mapped, content, name } : { role: mapped, content },
    );
  }
  return messages;
}

/** Fields that ask for what this server does not do: refused rather than ignored. */
function refuseUnsupported(body: Body): FieldProblem | null {
  const tools = body.tools;
  if (!absent(tools) && !(Array.isArray(tools) && tools.length === 0))
    return new FieldProblem('tools', 'tools are not supported by this server');
  if (!absent(body.tool_choice) && body.tool_choice !== 'none')
    return new FieldProblem('tool_choice', 'tool_choice is not supported by this server');
  if (!absent(body.functions))
    return new FieldProblem('functions', 'functions are not supported by this server');
  if (!absent(body.function_call))
    return new FieldProblem('function_call', 'function_call is not supported by this server');
  const format = body.response_format;
  if (!absent(format) && (format as Body).type !== 'text')
    return new FieldProblem(
      'response_format',
      'response_format other than {"type": "text"} is not supported by this server',
    );
  if (!absent(body.audio))
    return new FieldProblem('audio', 'audio is not supported by this server');
  const modalities = body.modalities;
  if (!absent(modalities) && !(Array.isArray(modalities) && modalities.every((m) => m === 'text')))
    return new FieldProblem('modalities', 'only the text modality is supported by this server');
  return null;
}

export function parseChatRequest(raw: unknown, limits: RequestLimits): ParsedRequest<ChatRequest> {
  return parseRequest(raw, limits, readChat);
}

function readChat(body: Body, fields: GenerationFields): ChatRequest | FieldProblem {
  const messages = readMessages(body);
  if (messages instanceof FieldProblem) return messages;
  const unsupported = refuseUnsupported(body);
  if (unsupported !== null) return unsupported;
  const logprobs = readBoolean(body, 'logprobs', false);
  if (logprobs instanceof FieldProblem) return logprobs;
  const topLogprobs = readInteger(body, 'top_logprobs', 0, maxTopLogprobs);
  if (topLogprobs instanceof FieldProblem) return topLogprobs;
  if (topLogprobs !== null && topLogprobs > 0 && !logprobs)
    return new FieldProblem('top_logprobs', 'top_logprobs requires logprobs to be true');
  return { ...fields, messages, logprobs, topLogprobs: topLogprobs ?? 0 };
}
