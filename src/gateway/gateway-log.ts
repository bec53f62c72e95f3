// The gateway's operational log: JSON lines on stderr (stdout belongs to the one
// `{"event":"listening"}` line the control plane reads). Never called per request.

import { pino } from 'pino';

export interface GatewayLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

const silent: GatewayLog = { info() {}, warn() {} };

export function createGatewayLog(enabled: boolean): GatewayLog {
  if (!enabled) return silent;
  const logger = pino({ name: 'kiln-gateway' }, pino.destination(2));
  return {
    info: (fields, message) => logger.info(fields, message),
    warn: (fields, message) => logger.warn(fields, message),
  };
}
