/** The part of autocannon 9's programmatic API the benchmark uses (the package ships no types). */
declare module "autocannon" {
  interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    total: number;
    p50: number;
    p90: number;
    p99: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    /** Seconds. */
    duration: number;
    errors: number;
    timeouts: number;
    mismatches: number;
    non2xx: number;
    "2xx": number;
    statusCodeStats: Record<string, { count: number }>;
  }
  interface Options {
    url: string;
    connections?: number;
    /** Seconds. */
    duration?: number;
    /** Stop after this many requests (instead of `duration`). */
    amount?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
