// The gateway's request and response classes. node:http builds one of each per request; we
// subclass them only to carry a slot for the request's exchange, so the body and socket
// listeners can be module-level functions (no per-request closures on the hot path): node
// calls a listener with `this` set to the emitter, and the listener finds its state here.

import { IncomingMessage, ServerResponse } from 'node:http';

/** What a request in flight answers to; `UpstreamExchange` implements it. */
export interface ExchangeEvents {
  onBodyData(chunk: Buffer): void;
  onBodyEnd(): void;
  /** The client connection closed; if the response was not finished, the client is gone. */
  onClientClose(): void;
  /** The request stream closed; before its body was complete, the client is gone. */
  onRequestClose(): void;
  /** The client socket drained after a write returned false. */
  onClientDrain(): void;
}

export class GatewayRequest extends IncomingMessage {
  exchange: ExchangeEvents | null = null;
}

export class GatewayResponse extends ServerResponse<GatewayRequest> {
  exchange: ExchangeEvents | null = null;
}

export function onRequestData(this: GatewayRequest, chunk: Buffer): void {
  this.exchange?.onBodyData(chunk);
}

export function onRequestEnd(this: GatewayRequest): void {
  this.exchange?.onBodyEnd();
}

export function onRequestClose(this: GatewayRequest): void {
  this.exchange?.onRequestClose();
}

export function onResponseClose(this: GatewayResponse): void {
  this.exchange?.onClientClose();
}

export function onResponseDrain(this: GatewayResponse): void {
  this.exchange?.onClientDrain();
}
