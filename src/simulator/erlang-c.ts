// Closed forms for the M/M/c queue (Poisson arrivals at rate lambda, c servers, exponential
// service at rate mu each, one FIFO queue), to check the simulator's queueing model against:
// one replica with c slots and exponential service times is exactly this queue.
//
//   offered load a = lambda / mu, utilization rho = a / c (< 1 for a steady state)
//   Erlang C:  P(wait) = (a^c / c!) / (1 - rho) / (sum_{k<c} a^k / k! + (a^c / c!) / (1 - rho))
//   mean wait  Wq = P(wait) / (c mu - lambda)

export interface ErlangC {
  /** Probability an arrival waits (all c busy). */
  readonly waitProbability: number;
  /** Mean time in the queue, in the unit of 1 / mu. */
  readonly meanWait: number;
  /** Mean time in the system (queue + service). */
  readonly meanResponse: number;
}

/** null when the queue has no steady state (lambda >= c mu) or the input is not positive. */
export function erlangC(servers: number, arrivalRate: number, serviceRate: number): ErlangC | null {
  if (!(Number.isInteger(servers) && servers >= 1 && arrivalRate > 0 && serviceRate > 0))
    return null;
  const offered = arrivalRate / serviceRate;
  const rho = offered / servers;
  if (rho >= 1) return null;
  // Terms a^k / k! built iteratively: no factorial overflow for realistic c.
  let term = 1;
  let sum = 0;
  for (let k = 0; k < servers; k++) {
    sum += term;
    term = (term * offered) / (k + 1);
  }
  const tail = term / (1 - rho); // a^c / c! / (1 - rho)
  const waitProbability = tail / (sum + tail);
  const meanWait = waitProbability / (servers * serviceRate - arrivalRate);
  return { waitProbability, meanWait, meanResponse: meanWait + 1 / serviceRate };
}
