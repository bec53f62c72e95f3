// Cost routes (issue 15 E, docs/cost.md):
//
//   GET /api/v1/cost?by=team|endpoint&since=7d|ISO&until=ISO&format=json|csv   read
//
// The chargeback report: replica time priced by the platform's price table, requests, LLM
// tokens and right-sizing hints, over [since, until) (since floored to the hour: usage is
// kept per hour). `since` is a duration back from now (30m, 12h, 7d) or an ISO 8601 time.

import type { FastifyInstance } from 'fastify';
import type { Clock } from '../../core/clock.ts';
import { kilnError } from '../../core/errors.ts';
import { costReportCsv } from '../../observability/cost/cost-report-csv.ts';
import type { CostGrouping } from '../../observability/cost/cost-report.ts';
import { readAccess } from '../access-policy.ts';
import type { CostService } from '../observability/cost-service.ts';

const costQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    by: { type: 'string', enum: ['team', 'endpoint'], default: 'team' },
    since: { type: 'string', minLength: 1, maxLength: 64, default: '7d' },
    until: { type: 'string', minLength: 1, maxLength: 64 },
    format: { type: 'string', enum: ['json', 'csv'], default: 'json' },
  },
} as const;

const unitMs: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration back from nowMs (`7d`) or an ISO time, as epoch ms; a 400 naming the field. */
export function timeParam(field: string, text: string, nowMs: number): number {
  const duration = /^(\d{1,6})([smhd])$/.exec(text.trim());
  if (duration !== null) return nowMs - Number(duration[1]) * unitMs[duration[2]!]!;
  const ms = Date.parse(text);
  if (Number.isNaN(ms))
    throw kilnError(
      'KILN_VALIDATION_FAILED',
      {
        reason: `${field} ${JSON.stringify(text)} is neither a duration (30m, 12h, 7d) nor an ISO 8601 time`,
      },
      { field },
    );
  return ms;
}

export function registerCostRoutes(app: FastifyInstance, cost: CostService, clock: Clock): void {
  app.get<{
    Querystring: { by: CostGrouping; since: string; until?: string; format: 'json' | 'csv' };
  }>(
    '/api/v1/cost',
    { schema: { querystring: costQuery }, config: { access: readAccess } },
    async (request, reply) => {
      const nowMs = clock.now();
      const { by, format } = request.query;
      const sinceMs = timeParam('since', request.query.since, nowMs);
      const untilMs =
        request.query.until === undefined ? nowMs : timeParam('until', request.query.until, nowMs);
      if (!(untilMs > sinceMs))
        throw kilnError(
          'KILN_VALIDATION_FAILED',
          {
            reason: `until ${new Date(untilMs).toISOString()} must be after since ${new Date(sinceMs).toISOString()}`,
          },
          { field: 'until' },
        );
      const report = await cost.report({ by, sinceMs, untilMs });
      if (format === 'csv')
        return reply.type('text/csv; charset=utf-8').send(costReportCsv(report));
      return { ...report, prices: { source: cost.pricesSource, table: cost.prices } };
    },
  );
}
