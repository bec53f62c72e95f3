// The body of `GET /api/v1/endpoints/{e}/drift`, for the CLI (which reaches the platform over
// HTTP only and imports these types, not the service).

export type {
  DriftComparison,
  DriftGroup,
  DriftItem,
  VersionDrift,
} from '../../../observability/drift/drift-report.ts';
export type { DriftReportBody as DriftReportBodyView } from './drift-service.ts';
