// /api/v1/experiments: A/B experiments over an endpoint's versions (issue 13; the service is
// src/control/traffic/experiments.ts, the report experiment-report.ts).
//
//   POST /api/v1/experiments                 start one (201)
//   GET  /api/v1/experiments                 list (?endpoint=, ?state=running|stopped)
//   GET  /api/v1/experiments/{id}            one
//   POST /api/v1/experiments/{id}/stop       stop it (its split leaves the endpoint)
//   POST /api/v1/experiments/{id}/outcomes   caller-reported outcomes
//   GET  /api/v1/experiments/{id}/report     per-variant traffic and outcome statistics
//
// Writes need the endpoint's team (deployer) or admin, like a deploy; reads any reader.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import type { Store } from '../../store/store.ts';
import type { ExperimentRecord } from '../../store/traffic-records.ts';
import { teamAccess } from '../access-policy.ts';
import {
  maxOutcomesPerCall,
  type CreateExperimentRequest,
  type ExperimentService,
  type OutcomeInput,
} from '../traffic/experiments.ts';
import { defaultReportOptions, type ReportOptions } from '../traffic/experiment-report.ts';
import { actorOf } from '../traffic/traffic-service.ts';

const shortString = { type: 'string', minLength: 1, maxLength: 256 } as const;

// Types of the variants are left to splitProblems, which names every problem at once
// (`variants[1].weight: must be a whole percent >= 0`) in KILN_TRAFFIC_POLICY_INVALID.
const createBody = {
  type: 'object',
  required: ['endpoint', 'name', 'variants'],
  additionalProperties: false,
  properties: {
    endpoint: shortString,
    name: { type: 'string', minLength: 1, maxLength: 128 },
    variants: { type: 'array', maxItems: 16 },
    keyPath: { type: ['string', 'null'], maxLength: 256 },
    reason: { type: 'string', maxLength: 1024 },
  },
} as const;

// Entries are checked by the service, all problems named with their index.
const outcomesBody = {
  type: 'object',
  required: ['outcomes'],
  additionalProperties: false,
  properties: {
    outcomes: { type: 'array', maxItems: maxOutcomesPerCall, items: { type: 'object' } },
  },
} as const;

const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    endpoint: shortString,
    state: { type: 'string', enum: ['running', 'stopped'] },
  },
} as const;

const reportQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    alpha: { type: 'number', exclusiveMinimum: 0, maximum: 0.5 },
    power: { type: 'number', minimum: 0.5, exclusiveMaximum: 1 },
    // `0.02` for every metric, or `converted=0.02,revenue=1.5` per metric.
    mde: { type: 'string', minLength: 1, maxLength: 1024 },
  },
} as const;

interface ReportQuery {
  readonly alpha?: number;
  readonly power?: number;
  readonly mde?: string;
}

export function registerExperimentRoutes(
  app: FastifyInstance,
  store: Store,
  experiments: ExperimentService,
): void {
  const endpointTeams = async (name: string): Promise<readonly string[]> => {
    const endpoint = await store.getEndpoint(name);
    return endpoint === null ? [] : [endpoint.team];
  };
  const experimentTeams = async (request: FastifyRequest): Promise<readonly string[]> => {
    const experiment = await store.getExperiment((request.params as { id: string }).id);
    return experiment === null ? [] : endpointTeams(experiment.endpoint);
  };

  app.post<{ Body: CreateExperimentRequest }>(
    '/api/v1/experiments',
    {
      schema: { body: createBody },
      config: {
        access: teamAccess('run experiments', (request) =>
          endpointTeams((request.body as CreateExperimentRequest).endpoint),
        ),
      },
    },
    async (request, reply) => {
      const experiment = await experiments.create(request.body, actorOf(request));
      return reply.code(201).send(experiment);
    },
  );

  app.get<{ Querystring: { endpoint?: string; state?: ExperimentRecord['state'] } }>(
    '/api/v1/experiments',
    { schema: { querystring: listQuery } },
    async (request) => {
      const { endpoint, state } = request.query;
      return {
        items: await experiments.list({
          ...(endpoint === undefined ? {} : { endpoint }),
          ...(state === undefined ? {} : { state }),
        }),
      };
    },
  );

  app.get<{ Params: { id: string } }>('/api/v1/experiments/:id', async (request) =>
    experiments.get(request.params.id),
  );

  // No body schema: a bare POST (no body at all) is a stop without a reason.
  app.post<{ Params: { id: string }; Body: unknown }>(
    '/api/v1/experiments/:id/stop',
    { config: { access: teamAccess('stop experiments', experimentTeams) } },
    async (request) =>
      experiments.stop(request.params.id, actorOf(request), reasonOf(request.body)),
  );

  app.post<{ Params: { id: string }; Body: { outcomes: OutcomeInput[] } }>(
    '/api/v1/experiments/:id/outcomes',
    {
      schema: { body: outcomesBody },
      config: { access: teamAccess('report experiment outcomes', experimentTeams) },
    },
    async (request) => experiments.addOutcomes(request.params.id, request.body.outcomes),
  );

  app.get<{ Params: { id: string }; Querystring: ReportQuery }>(
    '/api/v1/experiments/:id/report',
    { schema: { querystring: reportQuery } },
    async (request) => experiments.report(request.params.id, reportOptions(request.query)),
  );
}

/** The report's options from its query; a malformed `mde` is a 400 naming it. */
export function reportOptions(query: ReportQuery): ReportOptions {
  const mde: Record<string, number> = {};
  let defaultMde: number | null = null;
  for (const part of (query.mde ?? '').split(',')) {
    const text = part.trim();
    if (text === '') continue;
    const at = text.indexOf('=');
    const metric = at < 0 ? null : text.slice(0, at).trim();
    const value = Number(at < 0 ? text : text.slice(at + 1));
    if (!Number.isFinite(value) || value === 0 || metric === '') {
      throw kilnError('KILN_VALIDATION_FAILED', {
        reason: `mde: expected a non-zero number or METRIC=NUMBER, got '${text}'`,
      });
    }
    if (metric === null) defaultMde = value;
    else mde[metric] = value;
  }
  return {
    alpha: query.alpha ?? defaultReportOptions.alpha,
    power: query.power ?? defaultReportOptions.power,
    mde,
    defaultMde,
  };
}

/** `{"reason"?: string}` or no body; anything else is a 400 naming it. */
function reasonOf(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  const fields =
    typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : null;
  const extra = fields === null ? [] : Object.keys(fields).filter((key) => key !== 'reason');
  const reason = fields?.['reason'];
  if (
    fields === null ||
    extra.length > 0 ||
    (reason !== undefined && (typeof reason !== 'string' || reason.length > 1024))
  ) {
    throw kilnError('KILN_VALIDATION_FAILED', {
      reason: 'a stop takes no body or {"reason": "at most 1024 characters"}',
    });
  }
  return reason;
}
