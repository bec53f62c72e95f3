// At deploy (issue 15, D): a prediction-log redaction rule must name a field the version has
// when its schema is known (declared): an input, a feature (the model's feature names), or
// `outputs.NAME`. A rule naming nothing would silently redact nothing — a typo in `ssn`
// would log every social security number — so it is refused, naming the rule. Without a
// schema the gateway counts the rules that match nothing
// (kiln_gateway_prediction_log_unmatched_redactions_total) and logs each once.

import { kilnError } from '../../core/errors.ts';
import {
  redactableFields,
  rulesNamingNothing,
} from '../../observability/prediction-log/redact-record.ts';
import type { ModelVersion } from '../../registry/types.ts';
import type { ObservabilityConfig } from '../../store/observability-config.ts';

export function checkRedactionFields(
  endpoint: string,
  observability: ObservabilityConfig | undefined,
  version: Pick<ModelVersion, 'schema' | 'formatInfo'>,
): void {
  const rules = observability?.predictionLog?.redact ?? [];
  const schema = version.schema;
  if (rules.length === 0 || schema === null) return;
  const names = (version.formatInfo as { featureNames?: unknown }).featureNames;
  const features = Array.isArray(names)
    ? names.filter((n): n is string => typeof n === 'string')
    : [];
  const fields = redactableFields(
    schema.inputs.map((i) => i.name),
    schema.outputs.map((o) => o.name),
    features,
  );
  const nothing = rulesNamingNothing(rules, fields);
  if (nothing.length === 0) return;
  const known = [...fields].slice(0, 20).join(', ');
  throw kilnError('KILN_OBSERVABILITY_INVALID', {
    endpoint,
    reason: `predictionLog: redact names ${nothing.join(', ')}, which the version does not have (its fields: ${known}; parameters.NAME for request parameters)`,
  });
}
