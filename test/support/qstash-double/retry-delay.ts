/**
 * Retry waits: QStash's default backoff `min(86400, e^(2.5·n))` seconds (n = retries so far,
 * counting the one about to happen) and the `Upstash-Retry-Delay` expression, milliseconds as a
 * function of `retried` with `+ - * / %`, parentheses and pow sqrt abs exp floor ceil round min max
 * (the SDK's `retryDelay` docs). A small recursive-descent evaluator; no `eval`.
 */

/** QStash's default wait before retry number `n` (1 for the first retry), in ms. */
export function defaultBackoffMs(n: number): number {
  return Math.min(86_400, Math.exp(2.5 * n)) * 1000;
}

/** A compiled `Upstash-Retry-Delay`: ms to wait given how many retries were made so far. */
export type RetryDelay = (retried: number) => number;

const FUNCTIONS: Record<string, (...args: number[]) => number> = {
  pow: (a = 0, b = 0) => a ** b,
  sqrt: (a = 0) => Math.sqrt(a),
  abs: (a = 0) => Math.abs(a),
  exp: (a = 0) => Math.exp(a),
  floor: (a = 0) => Math.floor(a),
  ceil: (a = 0) => Math.ceil(a),
  round: (a = 0) => Math.round(a),
  min: (...args) => Math.min(...args),
  max: (...args) => Math.max(...args),
};

type Node = (retried: number) => number;

/** Compile an expression; throws `SyntaxError` when it is not one QStash accepts. */
export function compileRetryDelay(expression: string): RetryDelay {
  const tokens = expression.match(/\d+(?:\.\d+)?|[A-Za-z_]\w*|[-+*/%(),]|\S/g) ?? [];
  let at = 0;
  const peek = () => tokens[at];
  const take = (expected?: string) => {
    const token = tokens[at++];
    if (token === undefined || (expected !== undefined && token !== expected)) {
      throw new SyntaxError(`bad retry delay expression: ${JSON.stringify(expression)}`);
    }
    return token;
  };
  const sum = (): Node => {
    let left = product();
    while (peek() === "+" || peek() === "-") {
      const op = take();
      const l = left;
      const r = product();
      left = op === "+" ? (x) => l(x) + r(x) : (x) => l(x) - r(x);
    }
    return left;
  };
  const product = (): Node => {
    let left = unary();
    while (peek() === "*" || peek() === "/" || peek() === "%") {
      const op = take();
      const l = left;
      const r = unary();
      left = op === "*" ? (x) => l(x) * r(x) : op === "/" ? (x) => l(x) / r(x) : (x) => l(x) % r(x);
    }
    return left;
  };
  const unary = (): Node => {
    if (peek() === "-") {
      take();
      const inner = unary();
      return (x) => -inner(x);
    }
    return primary();
  };
  const primary = (): Node => {
    const token = take();
    if (/^\d/.test(token)) {
      const value = Number(token);
      return () => value;
    }
    if (token === "(") {
      const inner = sum();
      take(")");
      return inner;
    }
    if (token === "retried") return (x) => x;
    const fn = FUNCTIONS[token];
    if (!fn) throw new SyntaxError(`unknown name ${JSON.stringify(token)} in retry delay`);
    take("(");
    const args: Node[] = [];
    if (peek() !== ")") {
      args.push(sum());
      while (peek() === ",") {
        take();
        args.push(sum());
      }
    }
    take(")");
    return (x) => fn(...args.map((arg) => arg(x)));
  };
  if (tokens.length === 0) throw new SyntaxError("empty retry delay expression");
  const root = sum();
  if (at !== tokens.length) {
    throw new SyntaxError(`unexpected ${JSON.stringify(tokens[at])} in retry delay expression`);
  }
  return (retried) => {
    const ms = root(retried);
    return Number.isFinite(ms) ? Math.max(0, ms) : 0;
  };
}
